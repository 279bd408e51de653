package provisioner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

func TestClassOutdated(t *testing.T) {
	with := func(edit func(*storagev1.StorageClass)) *storagev1.StorageClass {
		sc := storageClass()
		edit(sc)
		return sc
	}
	cases := []struct {
		name string
		have *storagev1.StorageClass
		want bool
	}{
		{name: "ours", have: storageClass(), want: false},
		{name: "no longer the default", have: with(func(sc *storagev1.StorageClass) { sc.Annotations = nil }), want: false},
		{name: "policy left to the API server's default", have: with(func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = nil }), want: false},
		{name: "the home-made node's, binding at once", have: with(func(sc *storagev1.StorageClass) {
			sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingImmediate)
		}), want: true},
		{name: "binding mode left to the API server's default", have: with(func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = nil }), want: true},
		{name: "retains", have: with(func(sc *storagev1.StorageClass) {
			sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRetain)
		}), want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := classOutdated(tc.have, storageClass()); got != tc.want {
				t.Errorf("classOutdated = %t, want %t", got, tc.want)
			}
		})
	}
}
