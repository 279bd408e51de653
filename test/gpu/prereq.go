// Package gpu is make test-gpu: a 2-worker MultiWorkerMirroredStrategy job on a
// local cluster whose node advertises the machine's real NVIDIA GPUs, each worker
// on its own. The test (gpu_test.go) builds only with -tags gpu; Missing, which it
// and make test-gpu run first, says what a machine lacks to run it.
package gpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Image is the CUDA TensorFlow image the job runs in, built by make
// tensorflow-gpu-image into LayoutDir. Its layout is loaded only when named (the
// scan of _out/images skips it for its 4 GB), so the test names it in up's Images.
const Image = "ghcr.io/tfk8s/tensorflow:2.21.0-gpu"

// LayoutDir is the image's OCI layout, under the source tree.
const LayoutDir = "_out/images/tensorflow-gpu"

// Tools are the binaries of bin/ the test runs: tfk8s's own (make build) and the
// local cluster's (make tools).
var Tools = []string{
	"tfk8s", "tfk8s-agent", "tfk8s-nodeinit", "tfk8s-controller", "tfk8s-nvml",
	"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy",
	"etcd", "containerd", "containerd-shim-runc-v2", "coredns", "registry", "versitygw",
}

// Env is where Missing looks, and how it probes what a file cannot show.
type Env struct {
	// Root stands for /: tests give a directory of their own.
	Root string
	// Repo is the source tree, with bin/ and _out/images/ under it.
	Repo string
	// NVML runs tfk8s-nvml devices (cmd): nil where NVML loads and lists a GPU.
	NVML func(ctx context.Context, cmd string) error
	// Index reaches the Python package index the image is built from: nil if it
	// answers.
	Index func(ctx context.Context) error
}

// Missing names each thing the GPU test needs that this machine lacks, one line
// each; none when it can run.
func Missing(ctx context.Context, env Env) []string {
	var missing []string
	if _, err := os.Stat(filepath.Join(env.Root, "dev", "nvidia0")); err != nil {
		missing = append(missing, "the NVIDIA driver: /dev/nvidia0 does not exist (no GPU, or the driver's kernel module is not loaded)")
	}
	var tools []string
	for _, name := range Tools {
		if _, err := os.Stat(filepath.Join(env.Repo, "bin", name)); err != nil {
			tools = append(tools, name)
		}
	}
	if len(tools) > 0 {
		missing = append(missing, fmt.Sprintf("bin/ tools: %v (make build tools)", tools))
	}
	nvmlCmd := filepath.Join(env.Repo, "bin", "tfk8s-nvml")
	if _, err := os.Stat(nvmlCmd); err != nil {
		missing = append(missing, "NVML: not checked, bin/tfk8s-nvml is missing (make build)")
	} else if err := env.NVML(ctx, nvmlCmd); err != nil {
		missing = append(missing, fmt.Sprintf("NVML: libnvidia-ml.so.1 does not load or lists no GPU: %v", err))
	}
	if _, err := os.Stat(filepath.Join(env.Repo, LayoutDir, "index.json")); err != nil {
		if err := env.Index(ctx); err != nil {
			missing = append(missing, fmt.Sprintf("the GPU image %s: not in %s, and the package index to build it from does not answer: %v",
				Image, LayoutDir, err))
		}
	}
	return missing
}
