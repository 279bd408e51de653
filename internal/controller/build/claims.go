package build

import (
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClaimName is the claim tfk8s creates for a job's volume, or the existing claim it names.
func ClaimName(job *tfv1.TFJob, v *tfv1.JobVolume) string {
	if v.ExistingClaim != "" {
		return v.ExistingClaim
	}
	return job.Name + "-" + v.Name
}

// podVolumeName is the pod volume of a job volume; the prefix keeps it apart from the
// template's own volumes.
func podVolumeName(v *tfv1.JobVolume) string { return "tfk8s-volume-" + v.Name }

// addJobVolumes mounts the job's volumes in every container of the pod.
func addJobVolumes(job *tfv1.TFJob, spec *corev1.PodSpec) {
	for i := range job.Spec.Volumes {
		v := &job.Spec.Volumes[i]
		spec.Volumes = append(spec.Volumes, corev1.Volume{
			Name: podVolumeName(v),
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: ClaimName(job, v), ReadOnly: v.ReadOnly,
			}},
		})
		for j := range spec.Containers {
			c := &spec.Containers[j]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: podVolumeName(v), MountPath: v.MountPath, ReadOnly: v.ReadOnly})
		}
	}
}

// Claim builds the claim of a volume tfk8s creates: owned by the job, so
// garbage collection deletes it with the job, unless the volume is retained.
func Claim(job *tfv1.TFJob, v *tfv1.JobVolume) *corev1.PersistentVolumeClaim {
	modes := v.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ClaimName(job, v),
			Namespace: job.Namespace,
			Labels:    map[string]string{tfv1.LabelJobName: job.Name, tfv1.LabelVolume: v.Name},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      modes,
			StorageClassName: v.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *v.Size}},
		},
	}
	if !v.Retain {
		pvc.OwnerReferences = []metav1.OwnerReference{OwnerRef(job)}
	}
	return pvc
}
