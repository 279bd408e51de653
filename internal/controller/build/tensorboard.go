package build

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/tensorboard"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// DefaultTensorBoardImage runs a job's TensorBoard unless the job names another: tfk8s's
// TensorFlow image, which has TensorBoard of the same release.
var DefaultTensorBoardImage = images.TensorFlow

// tensorBoardSource is what a job's TensorBoard reads: a directory of one of the job's
// volumes, or an S3 prefix mirrored into the pod.
type tensorBoardSource struct {
	volume *tfv1.JobVolume
	logDir string
	s3     string
}

// sourceOf picks the TensorBoard's source, as spec.tensorboard.logDir documents it.
func sourceOf(job *tfv1.TFJob) tensorBoardSource {
	logDir := job.Spec.TensorBoard.LogDir
	if strings.HasPrefix(logDir, "s3://") {
		return tensorBoardSource{s3: logDir, logDir: tensorboard.Dir}
	}
	for i := range job.Spec.Volumes {
		v := &job.Spec.Volumes[i]
		switch {
		case logDir == "" && v.Name == "logs":
			return tensorBoardSource{volume: v, logDir: v.MountPath}
		case logDir != "" && (logDir == v.MountPath || strings.HasPrefix(logDir, strings.TrimSuffix(v.MountPath, "/")+"/")):
			return tensorBoardSource{volume: v, logDir: logDir}
		}
	}
	return tensorBoardSource{s3: jobArtifactsPrefix(job), logDir: tensorboard.Dir}
}

// jobArtifactsPrefix is where the job's replicas store, <destination>/<namespace>/<job>/<run>/
// (storage.RunPrefix, which the controller does not link).
func jobArtifactsPrefix(job *tfv1.TFJob) string {
	if job.Spec.Artifacts == nil {
		return ""
	}
	prefix := strings.TrimSuffix(job.Spec.Artifacts.Destination, "/") + "/" + job.Namespace + "/" + job.Name + "/"
	if job.UID != "" {
		prefix += tfjob.RunID(string(job.UID)) + "/"
	}
	return prefix
}

// tensorBoardLabels select the TensorBoard's pod; its Deployment and Service also carry
// the job-name label, by which the controller's cache holds them (the pod does not: the
// job's headless Service selects by that label).
func tensorBoardLabels(job *tfv1.TFJob) map[string]string {
	return map[string]string{tfv1.LabelTensorBoard: job.Name}
}

func tensorBoardMeta(job *tfv1.TFJob) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            tfjob.TensorBoardName(job.Name),
		Namespace:       job.Namespace,
		Labels:          map[string]string{tfv1.LabelJobName: job.Name, tfv1.LabelTensorBoard: job.Name},
		OwnerReferences: []metav1.OwnerReference{OwnerRef(job)},
	}
}

// TensorBoard builds the job's TensorBoard Deployment: TensorBoard reading a
// local directory, fed by the tfk8s agent mirroring the summaries from S3 (TensorBoard's
// own loader, no S3 plugin in its image), or reading one of the job's volumes.
func TensorBoard(job *tfv1.TFJob, opts PodOptions) *appsv1.Deployment {
	src := sourceOf(job)
	image := job.Spec.TensorBoard.Image
	if image == "" {
		image = opts.TensorBoardImage
	}
	if image == "" {
		image = DefaultTensorBoardImage
	}
	spec := corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false)}
	if v := src.volume; v != nil {
		spec.Volumes = []corev1.Volume{{Name: podVolumeName(v), VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(job, v), ReadOnly: true},
		}}}
		mount := corev1.VolumeMount{Name: podVolumeName(v), MountPath: v.MountPath, ReadOnly: true}
		spec.Containers = []corev1.Container{tensorboard.Container(image, src.logDir, mount)}
	} else {
		spec.Volumes = []corev1.Volume{tensorboard.SummariesVolume()}
		agentImage := opts.Agent.Image
		if agentImage == "" {
			agentImage = DefaultAgentImage
		}
		mount := corev1.VolumeMount{Name: tensorboard.Volume, MountPath: tensorboard.Dir, ReadOnly: true}
		spec.Containers = []corev1.Container{
			tensorboard.Mirror("mirror", agentImage, src.s3, tensorboard.Dir, storageEnv(job.Spec.Storage)),
			tensorboard.Container(image, src.logDir, mount),
		}
	}
	return &appsv1.Deployment{
		ObjectMeta: tensorBoardMeta(job),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: tensorBoardLabels(job)},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: tensorBoardLabels(job)},
				Spec:       spec,
			},
		},
	}
}

// TensorBoardService builds the Service in front of the job's TensorBoard.
func TensorBoardService(job *tfv1.TFJob) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: tensorBoardMeta(job),
		Spec: corev1.ServiceSpec{
			Selector: tensorBoardLabels(job),
			Ports: []corev1.ServicePort{{
				Name: "http", Port: tfjob.TensorBoardPort, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}
