package provisioner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// onNode is a required node affinity to node, as a local volume has it.
func onNode(node string) *corev1.VolumeNodeAffinity {
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
		}}}},
	}}
}

func TestLocalVolume(t *testing.T) {
	claim := func(size string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{AccessModes: modes}}
		if size != "" {
			pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
		}
		return pvc
	}
	volume := func(size string, policy corev1.PersistentVolumeReclaimPolicy, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pvc-1"},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				AccessModes:                   modes,
				PersistentVolumeReclaimPolicy: policy,
				VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
				PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/state/volumes/pvc-1"}},
				NodeAffinity:                  onNode("node-2"),
			},
		}
	}
	cases := []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		class *storagev1.StorageClass
		want  *corev1.PersistentVolume
	}{
		{
			name:  "the claim's size and modes, the class's policy",
			claim: claim("3Gi", corev1.ReadWriteMany),
			class: storageClass(),
			want:  volume("3Gi", corev1.PersistentVolumeReclaimDelete, corev1.ReadWriteMany),
		},
		{
			name:  "a class that retains",
			claim: claim("3Gi", corev1.ReadWriteOnce),
			class: &storagev1.StorageClass{ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimRetain)},
			want:  volume("3Gi", corev1.PersistentVolumeReclaimRetain, corev1.ReadWriteOnce),
		},
		{
			name:  "defaults: 1Gi, ReadWriteOnce, Delete",
			claim: claim(""),
			class: &storagev1.StorageClass{},
			want:  volume("1Gi", corev1.PersistentVolumeReclaimDelete, corev1.ReadWriteOnce),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := controller.ProvisionOptions{PVName: "pvc-1", PVC: tc.claim, StorageClass: tc.class, SelectedNodeName: "node-2"}
			got := localVolume(opts, "node-2", "/state/volumes/pvc-1")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("volume (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVolumeNode(t *testing.T) {
	withAffinity := func(a *corev1.VolumeNodeAffinity) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{NodeAffinity: a}}
	}
	twoNodes := onNode("a")
	twoNodes.Required.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"a", "b"}
	otherKey := onNode("a")
	otherKey.Required.NodeSelectorTerms[0].MatchExpressions[0].Key = "zone"
	cases := []struct {
		name string
		pv   *corev1.PersistentVolume
		want string
	}{
		{name: "what localVolume writes", pv: localVolume(controller.ProvisionOptions{PVC: &corev1.PersistentVolumeClaim{}}, "node-2", "/v/x"), want: "node-2"},
		{name: "no affinity", pv: withAffinity(nil), want: ""},
		{name: "two nodes", pv: withAffinity(twoNodes), want: ""},
		{name: "another label", pv: withAffinity(otherKey), want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := volumeNode(tc.pv); got != tc.want {
				t.Errorf("volumeNode = %q, want %q", got, tc.want)
			}
		})
	}
}
