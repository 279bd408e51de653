package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestDeviceClaimTemplate checks the ResourceClaimTemplate made from a deviceClaim:
// named after the job and replica type, owned by the job, one request of exactly the
// count asked, the selectors as CEL in order.
func TestDeviceClaimTemplate(t *testing.T) {
	exactly := func(count int64, selectors ...string) *resourcev1.ExactDeviceRequest {
		r := &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}
		for _, s := range selectors {
			r.Selectors = append(r.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
		}
		return r
	}
	cases := []struct {
		name  string
		rt    tfv1.ReplicaType
		claim tfv1.DeviceClaim
		want  *resourcev1.ExactDeviceRequest
	}{
		{name: "count unset is one device", rt: tfv1.ReplicaTypeWorker,
			claim: tfv1.DeviceClaim{DeviceClassName: "gpu.example.com"}, want: exactly(1)},
		{name: "count and selectors", rt: tfv1.ReplicaTypeChief,
			claim: tfv1.DeviceClaim{DeviceClassName: "gpu.example.com", Count: ptr.To[int64](2),
				Selectors: []string{`device.attributes["gpu.example.com"].model == "LATEST-GPU-MODEL"`, `device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`}},
			want: exactly(2, `device.attributes["gpu.example.com"].model == "LATEST-GPU-MODEL"`, `device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("mnist", "ml").UID("uid-1").Chief().Workers(2).Obj()
			labels := ReplicaLabels("mnist", tc.rt)
			want := &resourcev1.ResourceClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{
					Name: "mnist-" + labels[tfv1.LabelReplicaType] + "-devices", Namespace: "ml",
					Labels: labels, OwnerReferences: []metav1.OwnerReference{ownerRef},
				},
				Spec: resourcev1.ResourceClaimTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
						Requests: []resourcev1.DeviceRequest{{Name: "devices", Exactly: tc.want}},
					}},
				},
			}
			got := DeviceClaimTemplate(job, tc.rt, &tc.claim)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("template (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodDeviceClaims checks what the pods get: a replica type with a deviceClaim gets
// a claim from its own template, used by the TensorFlow container only; the template's
// own resourceClaims pass through unchanged beside it; a type without one gets none.
func TestPodDeviceClaims(t *testing.T) {
	type claims struct {
		Pod        []corev1.PodResourceClaim
		Containers map[string][]corev1.ResourceClaim
	}
	shared := corev1.PodResourceClaim{Name: "shared-nic", ResourceClaimName: ptr.To("team-nic")}
	sidecar := corev1.Container{Name: "sidecar", Image: "busybox", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "shared-nic"}}}}
	cases := []struct {
		name      string
		rt        tfv1.ReplicaType
		ownClaims bool
		want      claims
	}{
		{name: "deviceClaim alone", rt: tfv1.ReplicaTypeWorker, want: claims{
			Pod:        []corev1.PodResourceClaim{{Name: "tfk8s-devices", ResourceClaimTemplateName: ptr.To("mnist-worker-devices")}},
			Containers: map[string][]corev1.ResourceClaim{"tensorflow": {{Name: "tfk8s-devices"}}},
		}},
		{name: "the template's own claims pass through beside it", rt: tfv1.ReplicaTypeWorker, ownClaims: true, want: claims{
			Pod:        []corev1.PodResourceClaim{shared, {Name: "tfk8s-devices", ResourceClaimTemplateName: ptr.To("mnist-worker-devices")}},
			Containers: map[string][]corev1.ResourceClaim{"tensorflow": {{Name: "tfk8s-devices"}}, "sidecar": {{Name: "shared-nic"}}},
		}},
		{name: "own claims without a deviceClaim are untouched", rt: tfv1.ReplicaTypePS, ownClaims: true, want: claims{
			Pod:        []corev1.PodResourceClaim{shared},
			Containers: map[string][]corev1.ResourceClaim{"sidecar": {{Name: "shared-nic"}}},
		}},
		{name: "no claims at all", rt: tfv1.ReplicaTypePS, want: claims{Containers: map[string][]corev1.ResourceClaim{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("mnist", "ml").UID("uid-1").PS(1).Workers(2).Obj()
			job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].DeviceClaim = &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com"}
			if tc.ownClaims {
				spec := &job.Spec.TFReplicaSpecs[tc.rt].Template.Spec
				spec.ResourceClaims = []corev1.PodResourceClaim{shared}
				spec.Containers = append(spec.Containers, sidecar)
			}
			pod := buildPod(t, job, tc.rt, 0, PodOptions{})
			got := claims{Pod: pod.Spec.ResourceClaims, Containers: map[string][]corev1.ResourceClaim{}}
			for _, c := range pod.Spec.Containers {
				if len(c.Resources.Claims) > 0 {
					got.Containers[c.Name] = c.Resources.Claims
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
		})
	}
}
