package main

import (
	"os"
	"path/filepath"
)

// gpuNotice runs at the start of every Python program in the GPU image (a .pth file's
// import): when the container has no GPU, it writes one line a user reads at the top of
// the log, instead of TensorFlow's own warnings spread among the first lines of
// training, and says so once (its children inherit TFK8S_GPU_NOTICE). A GPU is visible
// when a /dev/nvidiaN device is and the driver's libcuda.so.1, which the NVIDIA
// container toolkit mounts, loads.
const gpuNotice = `"""tfk8s: one line when a program in the GPU image finds no GPU."""
import glob
import os
import sys


def _gpu_visible():
    if not glob.glob("/dev/nvidia[0-9]*"):
        return False
    try:
        import ctypes

        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


if "TFK8S_GPU_NOTICE" not in os.environ:
    os.environ["TFK8S_GPU_NOTICE"] = "1"
    if not _gpu_visible():
        print("tfk8s: no GPU visible to this container; TensorFlow runs on the CPU", file=sys.stderr, flush=True)
`

// addNotice puts gpuNotice and the .pth file that imports it into the stage's packages.
func addNotice(stage string) error {
	site := filepath.Join(stage, sitePackages)
	if err := os.WriteFile(filepath.Join(site, "tfk8s_gpu_notice.py"), []byte(gpuNotice), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(site, "tfk8s-gpu-notice.pth"), []byte("import tfk8s_gpu_notice\n"), 0o644)
}
