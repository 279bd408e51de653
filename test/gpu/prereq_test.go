package gpu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// touch creates each file under dir, with its directories.
func touch(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMissing(t *testing.T) {
	noLib := func(context.Context, string) error {
		return errors.New("tfk8s-nvml: no GPU figures: NVML not loadable")
	}
	ok := func(context.Context, string) error { return nil }
	offline := func(context.Context) error { return errors.New("dial tcp: no route to host") }
	online := func(context.Context) error { return nil }
	allTools := func() []string {
		var out []string
		for _, name := range Tools {
			out = append(out, filepath.Join("bin", name))
		}
		return out
	}
	tests := []struct {
		name  string
		root  []string // files under the fake /
		repo  []string // files under the source tree
		nvml  func(context.Context, string) error
		index func(context.Context) error
		want  []string
	}{{
		// This machine as make test-gpu finds it: no GPU, tools built, the image not.
		name:  "no GPU, no driver, no image, offline",
		repo:  allTools(),
		nvml:  noLib,
		index: offline,
		want: []string{
			"the NVIDIA driver: /dev/nvidia0 does not exist (no GPU, or the driver's kernel module is not loaded)",
			"NVML: libnvidia-ml.so.1 does not load or lists no GPU: tfk8s-nvml: no GPU figures: NVML not loadable",
			"the GPU image ghcr.io/tfk8s/tensorflow:2.21.0-gpu: not in _out/images/tensorflow-gpu, and the package index to build it from does not answer: dial tcp: no route to host",
		},
	}, {
		name:  "nothing built",
		root:  []string{"dev/nvidia0"},
		nvml:  ok,
		index: online,
		want: []string{
			"bin/ tools: [tfk8s tfk8s-agent tfk8s-nodeinit tfk8s-controller tfk8s-nvml kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy etcd containerd containerd-shim-runc-v2 coredns registry versitygw] (make build tools)",
			"NVML: not checked, bin/tfk8s-nvml is missing (make build)",
		},
	}, {
		name:  "a GPU machine, the image to be built from the index",
		root:  []string{"dev/nvidia0"},
		repo:  allTools(),
		nvml:  ok,
		index: online,
	}, {
		name:  "a GPU machine offline, the image built",
		root:  []string{"dev/nvidia0"},
		repo:  append(allTools(), LayoutDir+"/index.json"),
		nvml:  ok,
		index: offline,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := Env{Root: t.TempDir(), Repo: t.TempDir(), NVML: tc.nvml, Index: tc.index}
			touch(t, env.Root, tc.root...)
			touch(t, env.Repo, tc.repo...)
			if diff := cmp.Diff(tc.want, Missing(context.Background(), env)); diff != "" {
				t.Errorf("Missing() (-want +got):\n%s", diff)
			}
		})
	}
}

// The check make test-gpu runs first, against this machine's real / and tfk8s-nvml:
// without a GPU (this project's machines) it names the driver first; with one, not.
func TestHostCheck(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	env := HostEnv(repo)
	env.Index = func(context.Context) error { return nil } // not this test's subject
	missing := Missing(context.Background(), env)
	driver := "the NVIDIA driver: /dev/nvidia0 does not exist (no GPU, or the driver's kernel module is not loaded)"
	_, err = os.Stat("/dev/nvidia0")
	if gpu, named := err == nil, len(missing) > 0 && missing[0] == driver; gpu == named {
		t.Errorf("Missing() = %q on a machine with /dev/nvidia0 %v: want the driver named first only without it", missing, gpu)
	}
}
