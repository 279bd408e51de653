// Package tensorboard builds the pod that tfk8s tensorboard runs over several runs:
// one mirror of each run's summaries from S3, and one TensorBoard over all of them,
// each run under its own directory. The CLI creates it with the user's own rights and
// deletes it when it stops forwarding; a job's own TensorBoard is the controller's.
package tensorboard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

const (
	// MaxRuns bounds the runs of one TensorBoard: each adds a mirror container.
	MaxRuns = 8
	// DefaultTTL bounds the pod's life (activeDeadlineSeconds) when the CLI that
	// created it cannot delete it.
	DefaultTTL = time.Hour

	// LabelRuns is on the pod; its value is the hash of its runs, which names it too.
	LabelRuns = "tfk8s.io/tensorboard-runs"
	// AnnotationRuns lists the pod's runs, JOB/RUN separated by commas, for a reader.
	AnnotationRuns = "tfk8s.io/runs"

	// Dir is where the mirrors write (here one directory <job>-<run> per run) and
	// where TensorBoard reads, in this pod and in a job's TensorBoard alike.
	Dir = "/tensorboard"
	// Volume is the emptyDir shared by the mirrors and TensorBoard.
	Volume = "summaries"
	// mirrorInterval is how often a mirror looks for new summaries in S3; the
	// replicas upload them every artifacts.interval.
	mirrorInterval = "5s"
)

// MirrorSizeLimit bounds the emptyDir the mirrors write summaries into, here and in
// the controller's TensorBoards: only event files are copied, and a bound keeps a run
// that writes more from filling the node's disk.
var MirrorSizeLimit = resource.MustParse("4Gi")

// Run is one run TensorBoard shows.
type Run struct {
	// Job and Run name it (Run is its 8-hex id).
	Job, Run string
	// Prefix is the s3:// prefix it stores under.
	Prefix string
	// Secret is its job's storage Secret; "" when its record names none.
	Secret string
}

// Name is the run's directory in TensorBoard, and so the name TensorBoard shows:
// <job>-<run>, or <job> for a run stored before runs had ids.
func (r Run) Name() string {
	if r.Run == storage.LegacyRun {
		return r.Job
	}
	return r.Job + "-" + r.Run
}

// Spec is what the pod is built from.
type Spec struct {
	Namespace string
	Runs      []Run
	// AgentImage runs the mirrors, Image TensorBoard; images.Agent and
	// images.TensorFlow when empty.
	AgentImage, Image string
	// TTL is the pod's activeDeadlineSeconds; DefaultTTL when zero.
	TTL time.Duration
	// Secret is the Secret every mirror reads S3 with: the runs' SharedSecret, or
	// the pod's own (OwnSecret).
	Secret string
}

// SharedSecret is the storage Secret all the runs' jobs read S3 with; "" when they
// read with different ones, or one names none. Each job the CLI submits has its own
// Secret, which goes with the job: runs of several jobs rarely share one.
func SharedSecret(runs []Run) string {
	if len(runs) == 0 {
		return ""
	}
	for _, r := range runs[1:] {
		if r.Secret != runs[0].Secret {
			return ""
		}
	}
	return runs[0].Secret
}

// OwnSecret builds the pod's own Secret, named as the pod and owned by it (pod as
// created, with its UID), so that the garbage collector deletes it with the pod; data
// are the S3 settings as jobs.SecretData writes them.
func OwnSecret(pod *corev1.Pod, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            pod.Name,
			Namespace:       pod.Namespace,
			Labels:          map[string]string{LabelRuns: pod.Labels[LabelRuns]},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// Check refuses a spec the pod cannot be built from, naming the run at fault.
func (s Spec) Check() error {
	switch {
	case len(s.Runs) == 0:
		return fmt.Errorf("no run to show")
	case len(s.Runs) > MaxRuns:
		return fmt.Errorf("%d runs: one TensorBoard shows at most %d", len(s.Runs), MaxRuns)
	case s.TTL < 0 || (s.TTL > 0 && s.TTL < time.Second):
		return fmt.Errorf("--ttl %s: want 1s or more", s.TTL)
	}
	if s.Secret == "" {
		return fmt.Errorf("no Secret to read S3 with")
	}
	for i, r := range s.Runs {
		if r.Prefix == "" {
			return fmt.Errorf("run %s/%s stores nothing in S3 (its job has no spec.artifacts)", r.Job, r.Run)
		}
		for _, o := range s.Runs[:i] {
			if o.Name() == r.Name() {
				return fmt.Errorf("run %s/%s is named twice", r.Job, r.Run)
			}
		}
	}
	return nil
}

// Hash identifies a set of runs, whatever their order: the first 10 hex digits of
// the SHA-256 of their sorted JOB/RUN names.
func Hash(runs []Run) string {
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.Job + "/" + r.Run
	}
	slices.Sort(names)
	sum := sha256.Sum256([]byte(strings.Join(names, "\n")))
	return hex.EncodeToString(sum[:])[:10]
}

// PodName names the pod of a set of runs, so that opening the same runs again
// replaces it.
func PodName(runs []Run) string { return "tensorboard-runs-" + Hash(runs) }

// Selector selects the pod of a set of runs.
func Selector(runs []Run) string { return LabelRuns + "=" + Hash(runs) }

// Pod builds the pod: a mirror container per run, writing to Dir/<job>-<run>, and
// TensorBoard on Dir; S3 read with s.Secret by reference only, no service
// account token, and a deadline so that a pod the CLI could not delete ends.
func Pod(s Spec) *corev1.Pod {
	agentImage := s.AgentImage
	if agentImage == "" {
		agentImage = images.Agent
	}
	ttl := s.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	var containers []corev1.Container
	names := make([]string, len(s.Runs))
	for i, r := range s.Runs {
		names[i] = r.Job + "/" + r.Run
		env := tfjob.StorageEnv(corev1.LocalObjectReference{Name: s.Secret})
		containers = append(containers, Mirror("mirror-"+strconv.Itoa(i), agentImage, r.Prefix, Dir+"/"+r.Name(), env))
	}
	containers = append(containers, Container(s.Image, Dir, corev1.VolumeMount{Name: Volume, MountPath: Dir, ReadOnly: true}))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        PodName(s.Runs),
			Namespace:   s.Namespace,
			Labels:      map[string]string{LabelRuns: Hash(s.Runs)},
			Annotations: map[string]string{AnnotationRuns: strings.Join(names, ",")},
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			ActiveDeadlineSeconds:        ptr.To(int64(ttl / time.Second)),
			RestartPolicy:                corev1.RestartPolicyAlways,
			Volumes:                      []corev1.Volume{SummariesVolume()},
			Containers:                   containers,
		},
	}
}

// Container serves TensorBoard over logDir, which it mounts read-only by mount,
// ready once it answers; image is images.TensorFlow when empty. The pods of
// tfk8s tensorboard and the controller's TensorBoards run it alike.
func Container(image, logDir string, mount corev1.VolumeMount) corev1.Container {
	if image == "" {
		image = images.TensorFlow
	}
	return corev1.Container{
		Name:  "tensorboard",
		Image: image,
		Command: []string{"tensorboard", "--logdir", logDir, "--bind_all", "--port", strconv.Itoa(int(tfjob.TensorBoardPort)),
			"--reload_interval", "5", "--reload_multifile", "true"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: tfjob.TensorBoardPort, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
			PeriodSeconds: 2,
		},
		VolumeMounts: []corev1.VolumeMount{mount},
	}
}

// Mirror is the agent copying the event files under the s3:// prefix from into the
// directory to of SummariesVolume, every mirrorInterval, reading S3 as env says:
// TensorBoard's own loader then reads local files, with no S3 plugin in its image.
func Mirror(name, agentImage, from, to string, env []corev1.EnvVar) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           agentImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"tfk8s-agent", "mirror", "--from", from, "--to", to,
			"--interval", mirrorInterval, "--include", "*tfevents*"},
		Env:          env,
		VolumeMounts: []corev1.VolumeMount{{Name: Volume, MountPath: Dir}},
	}
}

// SummariesVolume is the emptyDir, bounded by MirrorSizeLimit, the mirrors write
// into and TensorBoard reads, mounted at Dir.
func SummariesVolume() corev1.Volume {
	return corev1.Volume{Name: Volume, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(MirrorSizeLimit.DeepCopy())},
	}}
}
