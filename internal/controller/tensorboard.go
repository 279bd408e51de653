package controller

import (
	"fmt"
	"strconv"
	"strings"
	"time"

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

const (
	// tensorBoardDir is where the TensorBoard pod's mirror writes the summaries.
	tensorBoardDir = "/tensorboard"
	// tensorBoardVolume is the emptyDir shared by the mirror and TensorBoard.
	tensorBoardVolume = "summaries"
	// mirrorInterval is how often the mirror looks for new summaries in S3; the
	// replicas upload them every artifacts.interval.
	mirrorInterval = "5s"
	// defaultTensorBoardTTL is how long TensorBoard stays after the job finished.
	defaultTensorBoardTTL = time.Hour
)

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
		return tensorBoardSource{s3: logDir, logDir: tensorBoardDir}
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
	return tensorBoardSource{s3: jobArtifactsPrefix(job), logDir: tensorBoardDir}
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
		OwnerReferences: []metav1.OwnerReference{controllerRef(job)},
	}
}

// constructTensorBoard builds the job's TensorBoard Deployment: TensorBoard reading a
// local directory, fed by the tfk8s agent mirroring the summaries from S3 (TensorBoard's
// own loader, no S3 plugin in its image), or reading one of the job's volumes.
func constructTensorBoard(job *tfv1.TFJob, opts PodOptions) *appsv1.Deployment {
	src := sourceOf(job)
	image := job.Spec.TensorBoard.Image
	if image == "" {
		image = opts.TensorBoardImage
	}
	if image == "" {
		image = DefaultTensorBoardImage
	}
	port := strconv.Itoa(int(tfjob.TensorBoardPort))
	tb := corev1.Container{
		Name:  "tensorboard",
		Image: image,
		Command: []string{"tensorboard", "--logdir", src.logDir, "--bind_all", "--port", port,
			"--reload_interval", "5", "--reload_multifile", "true"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: tfjob.TensorBoardPort, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
			PeriodSeconds: 2,
		},
	}
	spec := corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false)}
	if src.volume != nil {
		v := src.volume
		spec.Volumes = []corev1.Volume{{Name: podVolumeName(v), VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(job, v), ReadOnly: true},
		}}}
		tb.VolumeMounts = []corev1.VolumeMount{{Name: podVolumeName(v), MountPath: v.MountPath, ReadOnly: true}}
		spec.Containers = []corev1.Container{tb}
	} else {
		spec.Volumes = []corev1.Volume{{Name: tensorBoardVolume, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(tensorboard.MirrorSizeLimit.DeepCopy())},
		}}}
		mount := corev1.VolumeMount{Name: tensorBoardVolume, MountPath: tensorBoardDir}
		tb.VolumeMounts = []corev1.VolumeMount{{Name: tensorBoardVolume, MountPath: tensorBoardDir, ReadOnly: true}}
		agentImage := opts.Agent.Image
		if agentImage == "" {
			agentImage = DefaultAgentImage
		}
		mirror := corev1.Container{
			Name:            "mirror",
			Image:           agentImage,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"tfk8s-agent", "mirror", "--from", src.s3, "--to", tensorBoardDir,
				"--interval", mirrorInterval, "--include", "*tfevents*"},
			Env:          storageEnv(job.Spec.Storage),
			VolumeMounts: []corev1.VolumeMount{mount},
		}
		spec.Containers = []corev1.Container{mirror, tb}
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

// constructTensorBoardService builds the Service in front of the job's TensorBoard.
func constructTensorBoardService(job *tfv1.TFJob) *corev1.Service {
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

// tensorBoardExpiry is when the job's TensorBoard is deleted: its time to live after
// the job finished or after `tfk8s tensorboard` last asked for it, whichever is later;
// zero while the job has not finished.
func tensorBoardExpiry(job *tfv1.TFJob, st *tfv1.TFJobStatus) time.Time {
	if !jobFinished(st) || st.CompletionTime == nil {
		return time.Time{}
	}
	ttl := defaultTensorBoardTTL
	if s := job.Spec.TensorBoard.TTLSecondsAfterFinished; s != nil {
		ttl = time.Duration(*s) * time.Second
	}
	from := st.CompletionTime.Time
	if t, err := time.Parse(time.RFC3339, job.Annotations[tfv1.AnnotationTensorBoardRequested]); err == nil && t.After(from) {
		from = t
	}
	return from.Add(ttl)
}

// tensorBoardURL is the TensorBoard's address inside the cluster.
func tensorBoardURL(job *tfv1.TFJob) string {
	return fmt.Sprintf("http://%s.%s.svc:%d/", tfjob.TensorBoardName(job.Name), job.Namespace, tfjob.TensorBoardPort)
}
