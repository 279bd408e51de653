package e2e

import (
	"archive/tar"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/testing/registryserver"
)

// gpuNotice is the line the CUDA image prints when its container has no GPU.
const gpuNotice = "tfk8s: no GPU visible to this container; TensorFlow runs on the CPU"

// TestGPUImage runs the CUDA image make tensorflow-gpu-image built, on this machine
// without a GPU: ldconfig -p finds libcudart and libcudnn at paths the image's nvidia
// layers hold, and TensorFlow starts, says first that no GPU is visible, and computes
// on the CPU. It runs the image's root file system with chroot, unpacking only the
// Debian layer and TensorFlow's (2.4 GB): the whole image in a local cluster would take
// 15 GB (the registry's copy, containerd's and the unpacked snapshot).
func TestGPUImage(t *testing.T) {
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(binDir), "_out", "images", "tensorflow-gpu")
	if !fileExists(filepath.Join(dir, "index.json")) {
		t.Fatalf("no CUDA image in %s: make tensorflow-gpu-image", dir)
	}
	layers := gpuImageLayers(t, dir)
	root := t.TempDir()
	for _, l := range []v1.Layer{layers[0], layers[len(layers)-1]} {
		unpackLayer(t, l, root)
	}
	// What a container runtime gives every container: /proc, and the devices
	// TensorFlow reads (its random_device opens /dev/urandom).
	for _, dev := range []string{"null", "zero", "random", "urandom"} {
		if out, err := exec.Command("cp", "-a", "/dev/"+dev, filepath.Join(root, "dev", dev)).CombinedOutput(); err != nil {
			t.Fatalf("making /dev/%s in the image's root: %v\n%s", dev, err, out)
		}
	}
	if err := syscall.Mount("proc", filepath.Join(root, "proc"), "proc", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(filepath.Join(root, "proc"), syscall.MNT_DETACH) })

	out := inImage(t, root, "ldconfig", "-p")
	held := layerFiles(t, layers[1:len(layers)-1])
	for _, lib := range []string{"libcudart.so.12", "libcudnn.so.9"} {
		m := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(lib) + ` \(libc6,x86-64\) => (\S+)$`).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("ldconfig -p in the image finds no %s:\n%s", lib, out)
			continue
		}
		if !held[strings.TrimPrefix(m[1], "/")] {
			t.Errorf("ldconfig -p finds %s at %s, which no nvidia layer holds", lib, m[1])
		}
	}

	out = inImage(t, root, "python3", "-c", "import tensorflow as tf; print('GPUs', tf.config.list_physical_devices('GPU')); "+
		"print('sum', float(tf.reduce_sum(tf.ones([2, 2]))))")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != gpuNotice || strings.Count(out, gpuNotice) != 1 {
		t.Errorf("the output's first line is %q, want %q once:\n%s", lines[0], gpuNotice, out)
	}
	for _, want := range []string{"GPUs []", "sum 4.0"} {
		if !strings.Contains(out, "\n"+want+"\n") {
			t.Errorf("TensorFlow in the CUDA image printed no %q:\n%s", want, out)
		}
	}
}

// gpuImageLayers reads the layout in dir, checks that it names the CUDA image, and
// returns its layers, bottom first.
func gpuImageLayers(t *testing.T, dir string) []v1.Layer {
	t.Helper()
	inner := registryserver.BuiltIndex(t, dir)
	im, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if ref := im.Annotations["org.opencontainers.image.ref.name"]; ref != images.TensorFlowGPU {
		t.Fatalf("the layout %s names %q, want %s", dir, ref, images.TensorFlowGPU)
	}
	img, err := inner.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) < 3 {
		t.Fatalf("the CUDA image's layers: %d, %v; want Debian's, the nvidia packages' and TensorFlow's", len(layers), err)
	}
	return layers
}

// unpackLayer unpacks l into root with tar, as a node's snapshotter would.
func unpackLayer(t *testing.T, l v1.Layer, root string) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	cmd := exec.Command("tar", "-x", "--numeric-owner", "-C", root)
	cmd.Stdin = rc
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unpacking a layer of the CUDA image: %v\n%s", err, out)
	}
}

// layerFiles lists the regular files the layers hold, by path, without unpacking them.
func layerFiles(t *testing.T, layers []v1.Layer) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	for _, l := range layers {
		if err := listLayer(l, files); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// listLayer adds the regular files of l to files.
func listLayer(l v1.Layer, files map[string]bool) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			files[hdr.Name] = true
		}
	}
}

// inImage runs a command in root with chroot and a clean environment, as a container's
// would be, and returns its output, stderr and stdout together.
func inImage(t *testing.T, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command("chroot", append([]string{root, "env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"HOME=/root", "LANG=C.UTF-8"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in the CUDA image: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
