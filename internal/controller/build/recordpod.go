package build

import (
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// RecordPod builds a finished job's record pod: the agent writing end.json at
// the run's prefix, with the S3 credentials of the job's storage Secret as the replicas
// get them, under a restricted security context, owned by the job.
func RecordPod(job *tfv1.TFJob, st *tfv1.TFJobStatus, opts PodOptions) *corev1.Pod {
	image := opts.Agent.Image
	if image == "" {
		image = DefaultAgentImage
	}
	env := storageEnv(job.Spec.Storage)
	for _, kv := range [][2]string{
		{tfjob.EnvArtifactsDestination, job.Spec.Artifacts.Destination},
		{tfjob.EnvNamespace, job.Namespace},
		{tfjob.EnvJobName, job.Name},
		{tfjob.EnvRun, tfjob.RunID(string(job.UID))},
		{tfjob.EnvRunEnd, mustJSON(tfjob.EndOf(st))},
	} {
		env = append(env, corev1.EnvVar{Name: kv[0], Value: kv[1]})
	}
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            tfjob.RecordPodName(job.Name),
			Namespace:       job.Namespace,
			Labels:          map[string]string{tfv1.LabelJobName: job.Name, tfjob.LabelRecord: job.Name},
			OwnerReferences: []metav1.OwnerReference{OwnerRef(job)},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyOnFailure,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "record",
				Image:           image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"tfk8s-agent", "record"},
				Env:             env,
				Resources:       corev1.ResourceRequirements{Requests: small, Limits: small},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}
