package provisioner

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// defaultClaimSize is the capacity of a claim that requests none.
var defaultClaimSize = resource.MustParse("1Gi")

// localVolume is the PersistentVolume of a claim provisioned at path on node. It is a
// local volume: the kubelet bind-mounts it and applies the pod's fsGroup, which it does
// not for a hostPath volume, and the API server requires its node affinity. The
// library fills in the class, the claim reference and the provisioned-by annotation.
func localVolume(opts controller.ProvisionOptions, node, path string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claimSize(opts.PVC)},
			AccessModes:                   accessModes(opts.PVC),
			PersistentVolumeReclaimPolicy: reclaimPolicy(opts.StorageClass),
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				Local: &corev1.LocalVolumeSource{Path: path},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
		},
	}
}

// claimSize is the storage a claim requests, or defaultClaimSize.
func claimSize(pvc *corev1.PersistentVolumeClaim) resource.Quantity {
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		return q
	}
	return defaultClaimSize
}

// accessModes are the claim's access modes, or ReadWriteOnce.
func accessModes(pvc *corev1.PersistentVolumeClaim) []corev1.PersistentVolumeAccessMode {
	if len(pvc.Spec.AccessModes) == 0 {
		return []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return pvc.Spec.AccessModes
}

// reclaimPolicy is the class's reclaim policy, Delete by default as for the API server.
func reclaimPolicy(sc *storagev1.StorageClass) corev1.PersistentVolumeReclaimPolicy {
	if sc == nil || sc.ReclaimPolicy == nil {
		return corev1.PersistentVolumeReclaimDelete
	}
	return *sc.ReclaimPolicy
}

// volumeNode is the node a volume's node affinity names in the shape localVolume
// writes (one term, one hostname); "" for any other affinity.
func volumeNode(pv *corev1.PersistentVolume) string {
	a := pv.Spec.NodeAffinity
	if a == nil || a.Required == nil || len(a.Required.NodeSelectorTerms) != 1 {
		return ""
	}
	exprs := a.Required.NodeSelectorTerms[0].MatchExpressions
	if len(exprs) != 1 || exprs[0].Key != corev1.LabelHostname || exprs[0].Operator != corev1.NodeSelectorOpIn || len(exprs[0].Values) != 1 {
		return ""
	}
	return exprs[0].Values[0]
}

// volumePath is the host directory of a local volume, or of a hostPath volume such as
// the home-made node provisioned; "" for any other volume.
func volumePath(pv *corev1.PersistentVolume) string {
	switch {
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path
	}
	return ""
}
