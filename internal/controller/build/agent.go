package build

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// DefaultAgentImage holds the tfk8s-agent binary; its install command copies it into
// the pod. It is the agent image of the controller's own build (make images stamps
// both with one version), so that a controller never injects an agent of another
// release. Set another with the controller's --agent-image flag.
var DefaultAgentImage = images.Agent

const (
	// agentVolume is the emptyDir shared by the agent's init container and the
	// TensorFlow container: the agent binary and the logs live there.
	agentVolume = "tfk8s-agent"
	// agentImageVolume is the agent's image mounted as a volume, when the nodes can
	// (AgentOptions.ImageVolume); agentImageBinDir is where the image keeps its binary,
	// as make images builds it (/usr/local/bin, on PATH).
	agentImageVolume = "tfk8s-agent-image"
	agentImageBinDir = "usr/local/bin"
	agentBinDir      = tfjob.AgentDir + "/bin"
	agentBin         = agentBinDir + "/tfk8s-agent"
	// defaultAgentGracePeriod leaves the agent time for its last upload after SIGTERM.
	defaultAgentGracePeriod int64 = 120
)

// Size limits of the emptyDirs the agent gets. Without one, an archive that unpacks
// to more than it weighs (a gzip of zeros) fills the node's disk and the kubelet
// evicts other tenants' pods; with one, it evicts this pod alone.
var (
	// DefaultAgentDirSizeLimit bounds the agent's own directory: its binary (about
	// 40 MB) and the log of every attempt, which the agent also uploads.
	DefaultAgentDirSizeLimit = resource.MustParse("2Gi")
	// DefaultFetchSizeLimit bounds each directory the agent fetches code or data into,
	// unpacked; a larger data set goes on a volume the user mounts at its path.
	DefaultFetchSizeLimit = resource.MustParse("20Gi")
)

// AgentOptions say how the agent is injected.
type AgentOptions struct {
	// Image holds the tfk8s-agent binary; DefaultAgentImage when empty.
	Image string
	// DirSizeLimit bounds the agent's directory; DefaultAgentDirSizeLimit when nil.
	DirSizeLimit *resource.Quantity
	// FetchSizeLimit bounds each code or data directory; DefaultFetchSizeLimit when nil.
	FetchSizeLimit *resource.Quantity
	// ImageVolume mounts the agent's image as a volume, its binary where the init
	// container would have copied it: each pod then runs one container, not two, which
	// starts it seconds sooner. Detected (ImageVolumeDetector), not configured: a node
	// whose kubelet or runtime cannot mount images would never start the pod.
	ImageVolume bool
}

// limitOr is limit, or def when limit is nil, as an emptyDir's sizeLimit.
func limitOr(limit *resource.Quantity, def resource.Quantity) *resource.Quantity {
	if limit != nil {
		return ptr.To(limit.DeepCopy())
	}
	return ptr.To(def.DeepCopy())
}

// injectAgent adds the agent to a pod: its binary (the agent's image as a volume, or an
// init container copying it into a shared emptyDir), the TensorFlow container's command
// run by the agent, the agent's settings as environment variables (S3 credentials from
// the storage Secret, never literal), and a grace period long enough for the last upload.
func injectAgent(job *tfv1.TFJob, pod *corev1.Pod, c *corev1.Container, rt tfv1.ReplicaType, index int32, opts AgentOptions) {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name:         agentVolume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: limitOr(opts.DirSizeLimit, DefaultAgentDirSizeLimit)}},
	})
	// The training container sees the agent's binary read-only: a command that could
	// replace it would have its own code started, with the storage credentials, when
	// the container restarts.
	c.VolumeMounts = append(c.VolumeMounts, agentBinary(pod, opts),
		corev1.VolumeMount{Name: agentVolume, MountPath: tfjob.AgentLogDir, SubPath: path.Base(tfjob.AgentLogDir)})
	c.Command = append(append([]string{agentBin, "run", "--"}, c.Command...), c.Args...)
	c.Args = nil
	// A failed replica's last log lines become its termination message, and so the
	// message of the job's failure: what the program printed last, or the agent's word
	// on why it could not start it (storage refusing the credentials, a digest that
	// does not match).
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	}

	// Code and data land in emptyDirs unless the user mounted something there already.
	var dirs []string
	if job.Spec.Code != nil {
		dirs = append(dirs, tfjob.CodePath(job))
	}
	for _, d := range job.Spec.Data {
		dirs = append(dirs, d.Path)
	}
	for i, dir := range dirs {
		if hasMountAt(c, dir) {
			continue
		}
		name := fmt.Sprintf("tfk8s-fetch-%d", i)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         name,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: limitOr(opts.FetchSizeLimit, DefaultFetchSizeLimit)}},
		})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: dir})
	}

	for _, env := range agentEnv(job, c, rt, index) {
		tfjob.SetEnv(c, env)
	}
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		pod.Spec.TerminationGracePeriodSeconds = ptr.To(defaultAgentGracePeriod)
	}
}

// agentBinary adds to the pod what delivers the agent's binary, and returns the
// training container's read-only mount of it at agentBinDir.
func agentBinary(pod *corev1.Pod, opts AgentOptions) corev1.VolumeMount {
	image := opts.Image
	if image == "" {
		image = DefaultAgentImage
	}
	if opts.ImageVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         agentImageVolume,
			VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: image, PullPolicy: corev1.PullIfNotPresent}},
		})
		return corev1.VolumeMount{Name: agentImageVolume, MountPath: agentBinDir, SubPath: agentImageBinDir, ReadOnly: true}
	}
	pod.Spec.InitContainers = append([]corev1.Container{{
		Name:            "tfk8s-agent-install",
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"tfk8s-agent", "install", agentBinDir},
		VolumeMounts:    []corev1.VolumeMount{{Name: agentVolume, MountPath: tfjob.AgentDir}},
	}}, pod.Spec.InitContainers...)
	return corev1.VolumeMount{Name: agentVolume, MountPath: agentBinDir, SubPath: path.Base(agentBinDir), ReadOnly: true}
}

// agentEnv is the agent's configuration, as the environment variables it reads.
func agentEnv(job *tfv1.TFJob, c *corev1.Container, rt tfv1.ReplicaType, index int32) []corev1.EnvVar {
	var env []corev1.EnvVar
	add := func(name, value string) { env = append(env, corev1.EnvVar{Name: name, Value: value}) }
	if s := job.Spec.Storage; s != nil {
		env = append(env, storageEnv(s)...)
		if s.ExposeCredentials {
			add(tfjob.EnvExposeStorageCredentials, "true")
		}
	}
	if code := job.Spec.Code; code != nil {
		add(tfjob.EnvCodeSource, code.Source)
		add(tfjob.EnvCodeSHA256, code.SHA256)
		add(tfjob.EnvCodePath, tfjob.CodePath(job))
	}
	if len(job.Spec.Data) > 0 {
		add(tfjob.EnvData, mustJSON(job.Spec.Data))
	}
	if a := job.Spec.Artifacts; a != nil {
		add(tfjob.EnvArtifactsDestination, a.Destination)
		add(tfjob.EnvArtifactsPaths, mustJSON(a.Paths))
		if a.Interval != nil {
			add(tfjob.EnvArtifactsInterval, a.Interval.Duration.String())
		}
		if a.ResumeFrom != "" {
			add(tfjob.EnvArtifactsResumeFrom, a.ResumeFrom)
		}
	}
	if c.WorkingDir != "" {
		add(tfjob.EnvWorkDir, c.WorkingDir)
	}
	add(tfjob.EnvNamespace, job.Namespace)
	add(tfjob.EnvJobName, job.Name)
	if job.UID != "" {
		add(tfjob.EnvRun, tfjob.RunID(string(job.UID)))
	}
	add(tfjob.EnvReplica, tfjob.ReplicaName(rt, index))
	add(tfjob.EnvContainerName, c.Name)
	add(tfjob.EnvLogDir, tfjob.AgentLogDir)
	if tfjob.ServesProgress(job, rt, index) {
		add(tfjob.EnvProgressPort, strconv.Itoa(tfjob.ProgressPort))
	}
	fromField := func(name, path string) {
		env = append(env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
		}})
	}
	fromField(tfjob.EnvPodName, "metadata.name")
	fromField(tfjob.EnvPodUID, "metadata.uid")
	return env
}

// storageEnv is the S3 endpoint and credentials, from the storage Secret.
func storageEnv(s *tfv1.Storage) []corev1.EnvVar {
	return tfjob.StorageEnv(s.SecretRef)
}

func hasMountAt(c *corev1.Container, dir string) bool {
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) == path.Clean(dir) {
			return true
		}
	}
	return false
}

// mustJSON encodes values that always encode (slices of plain structs and strings).
func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}
