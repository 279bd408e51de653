package jobspec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/images"
)

// TestGPUDefaults: a job that asks for GPUs and names no image runs every replica but
// the parameter servers in the CUDA image, and --gpu-resource moves the count to the resource it names; the
// same JSON comes from the CLI's flags, the dashboard's form and the SDK.
func TestGPUDefaults(t *testing.T) {
	type replica struct {
		Image  string
		Limits corev1.ResourceList
	}
	gpu := func(name string, n string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceName(name): resource.MustParse(n)}
	}
	for _, tc := range []struct {
		name, js string
		want     map[tfv1.ReplicaType]replica
	}{
		{name: "--gpus without --image: the CUDA image, the CPU one for the parameter servers",
			js: `{"name": "a", "gpus": 2, "ps": 1}`,
			want: map[tfv1.ReplicaType]replica{
				tfv1.ReplicaTypeWorker: {images.TensorFlowGPU, gpu("nvidia.com/gpu", "2")},
				tfv1.ReplicaTypePS:     {Image: images.TensorFlow},
			}},
		{name: "--image wins over the default",
			js:   `{"name": "a", "gpus": 1, "image": "mine"}`,
			want: map[tfv1.ReplicaType]replica{tfv1.ReplicaTypeWorker: {"mine", gpu("nvidia.com/gpu", "1")}}},
		{name: "--gpu-resource takes the count",
			js:   `{"name": "a", "gpus": 1, "gpu-resource": "nvidia.com/mig-1g.10gb", "workers": 2}`,
			want: map[tfv1.ReplicaType]replica{tfv1.ReplicaTypeWorker: {images.TensorFlowGPU, gpu("nvidia.com/mig-1g.10gb", "1")}}},
		{name: "time-slicing's renamed resource",
			js:   `{"name": "a", "gpus": 1, "gpu-resource": "nvidia.com/gpu.shared", "image": "mine"}`,
			want: map[tfv1.ReplicaType]replica{tfv1.ReplicaTypeWorker: {"mine", gpu("nvidia.com/gpu.shared", "1")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Params
			if err := json.Unmarshal([]byte(tc.js), &p); err != nil {
				t.Fatal(err)
			}
			job, err := New(nil, p)
			if err != nil {
				t.Fatal(err)
			}
			got := map[tfv1.ReplicaType]replica{}
			for rt, spec := range job.Spec.TFReplicaSpecs {
				c := spec.Template.Spec.Containers[0]
				got[rt] = replica{c.Image, c.Resources.Limits}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("replicas (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGPUResourceRefused: a bad --gpu-resource is refused, naming the flag; no GPUs
// and no image is still refused.
func TestGPUResourceRefused(t *testing.T) {
	for _, tc := range []struct{ js, want string }{
		{`{"name": "a", "gpus": 1, "gpu-resource": "mig-1g.10gb"}`, `--gpu-resource "mig-1g.10gb": want an extended resource DOMAIN/NAME`},
		{`{"name": "a", "gpus": 1, "gpu-resource": "nvidia.com/mig 1g"}`, `--gpu-resource "nvidia.com/mig 1g": not a resource name`},
		{`{"name": "a", "gpus": 1, "gpu-resource": "kubernetes.io/gpu"}`, `--gpu-resource "kubernetes.io/gpu": want a GPU resource of NVIDIA's device plugin`},
		{`{"name": "a", "gpus": 1, "gpu-resource": "amd.com/gpu"}`, `--gpu-resource "amd.com/gpu": want a GPU resource of NVIDIA's device plugin`},
		{`{"name": "a", "gpus": 1, "gpu-resource": "nvidia.com/sriov_rdma"}`,
			`--gpu-resource "nvidia.com/sriov_rdma": want a GPU resource of NVIDIA's device plugin: nvidia.com/gpu, a shared GPU nvidia.com/gpu.NAME or a MIG profile nvidia.com/mig-PROFILE`},
		{`{"name": "a", "gpu-resource": "nvidia.com/gpu.shared", "image": "tf"}`, "--gpu-resource nvidia.com/gpu.shared: no replica asks for GPUs; add --gpus"},
		{`{"name": "a", "gpus": 1, "gpu-resource": "nvidia.com/gpu.shared", "device-class": "gpu.nvidia.com"}`,
			"--gpu-resource nvidia.com/gpu.shared: not with --device-class"},
		{`{"name": "a", "gpus": 0}`, "--image is required: replica type Worker has no image"},
	} {
		var p Params
		if err := json.Unmarshal([]byte(tc.js), &p); err != nil {
			t.Fatal(err)
		}
		_, err := New(nil, p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.js, err, tc.want)
		}
	}
}

// TestGPUFlagsReplaceTheManifestsGPUs: over a manifest that asks for GPUs one way,
// --gpus with --gpu-resource or --device-class asks for them the other way alone; a
// pod asking for both would wait for both.
func TestGPUFlagsReplaceTheManifestsGPUs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		manifest corev1.ResourceName
		js       string
		want     corev1.ResourceList
	}{
		{"--gpu-resource over whole GPUs", "nvidia.com/gpu", `{"gpus": 1, "gpu-resource": "nvidia.com/mig-1g.10gb"}`,
			corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("1")}},
		{"--gpus over a MIG profile", "nvidia.com/mig-1g.10gb", `{"gpus": 2}`,
			corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}},
		{"--device-class over a MIG profile", "nvidia.com/mig-1g.10gb", `{"gpus": 1, "device-class": "gpu.nvidia.com"}`,
			corev1.ResourceList{}},
		{"--gpus 0 over a shared GPU", "nvidia.com/gpu.shared", `{"gpus": 0}`, corev1.ResourceList{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := New(nil, Params{Name: "a", Image: "tf"})
			if err != nil {
				t.Fatal(err)
			}
			c := &base.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0]
			c.Resources.Limits = corev1.ResourceList{tc.manifest: resource.MustParse("2")}
			var p Params
			if err := json.Unmarshal([]byte(tc.js), &p); err != nil {
				t.Fatal(err)
			}
			job, err := New(base, p)
			if err != nil {
				t.Fatal(err)
			}
			got := job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Resources.Limits
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGPUResourceReadBack: a manifest's GPU resource is read back as --gpus and
// --gpu-resource, and another of NVIDIA's resources (a network device) is not, so
// submitting the manifest with the flags read back keeps every limit it had.
func TestGPUResourceReadBack(t *testing.T) {
	const rdma, hostdev = "nvidia.com/sriov_rdma", "nvidia.com/hostdev"
	for _, tc := range []struct {
		name         string
		limits       map[corev1.ResourceName]string
		wantResource string
		wantGPUs     int64
	}{
		{"whole GPUs beside a network device", map[corev1.ResourceName]string{"nvidia.com/gpu": "2", rdma: "1"}, "", 2},
		{"a network device alone", map[corev1.ResourceName]string{rdma: "1"}, "", 0},
		{"a MIG profile after a network device's name", map[corev1.ResourceName]string{hostdev: "1", "nvidia.com/mig-1g.10gb": "1"},
			"nvidia.com/mig-1g.10gb", 1},
		{"a shared GPU beside a network device", map[corev1.ResourceName]string{"nvidia.com/gpu.shared": "3", rdma: "2"},
			"nvidia.com/gpu.shared", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := New(nil, Params{Name: "a", Image: "tf"})
			if err != nil {
				t.Fatal(err)
			}
			limits := corev1.ResourceList{}
			for name, q := range tc.limits {
				limits[name] = resource.MustParse(q)
			}
			base.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Resources.Limits = limits
			p, _ := Inverse(base)
			if p.GPUResource != tc.wantResource || ptr.Deref(p.GPUs, 0) != tc.wantGPUs {
				t.Errorf("read back --gpu-resource %q --gpus %d, want %q and %d", p.GPUResource, ptr.Deref(p.GPUs, 0), tc.wantResource, tc.wantGPUs)
			}
			job, err := New(base, p)
			if err != nil {
				t.Fatalf("submitting with the flags read back: %v", err)
			}
			got := job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Resources.Limits
			if diff := cmp.Diff(limits, got); diff != "" {
				t.Errorf("limits after submitting with the flags read back (-want +got):\n%s", diff)
			}
		})
	}
}
