package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestServedClaim(t *testing.T) {
	claim := func(class *string, mutate func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
		if mutate != nil {
			mutate(c)
		}
		return c
	}
	cases := []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want bool
	}{
		{name: "no class", pvc: claim(nil, nil), want: true},
		{name: "tfk8s-local", pvc: claim(ptr.To(LocalStorageClass), nil), want: true},
		{name: "explicitly no class means static volumes only", pvc: claim(ptr.To(""), nil), want: false},
		{name: "other class", pvc: claim(ptr.To("fast"), nil), want: false},
		{name: "already bound", pvc: claim(nil, func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv1" }), want: false},
		{name: "being deleted", pvc: claim(nil, func(c *corev1.PersistentVolumeClaim) { c.DeletionTimestamp = &metav1.Time{} }), want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := servedClaim(tc.pvc); got != tc.want {
				t.Errorf("served %t, want %t", got, tc.want)
			}
		})
	}
}

func TestLocalVolume(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", UID: "u1"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(LocalStorageClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}},
		},
	}
	pv := localVolume(pvc, "n1", "/state/pv/u1")
	size := pv.Spec.Capacity[corev1.ResourceStorage]
	switch {
	case pv.Name != "pvc-u1":
		t.Errorf("name %q", pv.Name)
	case size.Cmp(resource.MustParse("5Gi")) != 0:
		t.Errorf("capacity %s", size.String())
	case pv.Spec.StorageClassName != LocalStorageClass || pv.Spec.AccessModes[0] != corev1.ReadWriteMany:
		t.Errorf("class %q modes %v", pv.Spec.StorageClassName, pv.Spec.AccessModes)
	case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != "u1" || pv.Spec.ClaimRef.Namespace != "ns":
		t.Errorf("claimRef %+v", pv.Spec.ClaimRef)
	case pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != "/state/pv/u1":
		t.Errorf("source %+v", pv.Spec.PersistentVolumeSource)
	case pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "n1":
		t.Errorf("node affinity %+v", pv.Spec.NodeAffinity)
	case pv.Annotations[annProvisionedBy] != ProvisionerName || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete:
		t.Errorf("annotations %v reclaim %s", pv.Annotations, pv.Spec.PersistentVolumeReclaimPolicy)
	}
	pvc.Spec.StorageClassName, pvc.Spec.Resources, pvc.Spec.AccessModes = nil, corev1.VolumeResourceRequirements{}, nil
	pv = localVolume(pvc, "n1", "/p")
	if size := pv.Spec.Capacity[corev1.ResourceStorage]; size.Cmp(resource.MustParse(defaultClaimSize)) != 0 || pv.Spec.StorageClassName != "" || pv.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("defaults: capacity %s class %q modes %v", size.String(), pv.Spec.StorageClassName, pv.Spec.AccessModes)
	}
}
