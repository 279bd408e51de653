package controller

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/version"
)

// DefaultAgentImage holds the tfk8s-agent binary; its install command copies it into
// the pod. It is the agent image of the controller's own build (make images stamps
// both with one version), so that a controller never injects an agent of another
// release. Set another with the controller's --agent-image flag.
var DefaultAgentImage = version.Image("tfk8s-agent")

const (
	// agentVolume is the emptyDir shared by the agent's init container and the
	// TensorFlow container: the agent binary and the logs live there.
	agentVolume = "tfk8s-agent"
	agentDir    = "/tfk8s"
	agentBin    = agentDir + "/bin/tfk8s-agent"
	// defaultAgentGracePeriod leaves the agent time for its last upload after SIGTERM.
	defaultAgentGracePeriod int64 = 120
)

// Keys of the storage Secret named by spec.storage.secretRef.
const (
	SecretKeyEndpoint        = "endpoint"
	SecretKeyAccessKeyID     = "accessKeyID"
	SecretKeySecretAccessKey = "secretAccessKey"
	SecretKeyRegion          = "region"
	SecretKeyInsecure        = "insecure"
)

// AgentOptions say how the agent is injected.
type AgentOptions struct {
	// Image holds the tfk8s-agent binary; DefaultAgentImage when empty.
	Image string
}

// needsAgent reports whether the job's pods need the agent: it fetches code and data
// and backs up artifacts and logs.
func needsAgent(job *tfv1.TFJob) bool {
	return job.Spec.Code != nil || len(job.Spec.Data) > 0 || job.Spec.Artifacts != nil
}

// injectAgent adds the agent to a pod: an init container copying the agent binary into
// a shared emptyDir, the TensorFlow container's command run by the agent, the agent's
// settings as environment variables (S3 credentials from the storage Secret, never
// literal), and a grace period long enough for the last upload.
func injectAgent(job *tfv1.TFJob, pod *corev1.Pod, c *corev1.Container, rt tfv1.ReplicaType, index int32, opts AgentOptions) {
	image := opts.Image
	if image == "" {
		image = DefaultAgentImage
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name:         agentVolume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
	})
	mount := corev1.VolumeMount{Name: agentVolume, MountPath: agentDir}
	pod.Spec.InitContainers = append([]corev1.Container{{
		Name:            "tfk8s-agent-install",
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"tfk8s-agent", "install", path.Dir(agentBin)},
		VolumeMounts:    []corev1.VolumeMount{mount},
	}}, pod.Spec.InitContainers...)

	c.VolumeMounts = append(c.VolumeMounts, mount)
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
		dirs = append(dirs, codePath(job))
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
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
		})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: dir})
	}

	for _, env := range agentEnv(job, c, rt, index) {
		SetEnv(c, env)
	}
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		pod.Spec.TerminationGracePeriodSeconds = ptr.To(defaultAgentGracePeriod)
	}
}

// agentEnv is the agent's configuration, as the environment variables it reads.
func agentEnv(job *tfv1.TFJob, c *corev1.Container, rt tfv1.ReplicaType, index int32) []corev1.EnvVar {
	var env []corev1.EnvVar
	add := func(name, value string) { env = append(env, corev1.EnvVar{Name: name, Value: value}) }
	if s := job.Spec.Storage; s != nil {
		fromSecret := func(name, key string, optional bool) {
			env = append(env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: s.SecretRef, Key: key, Optional: ptr.To(optional)},
			}})
		}
		fromSecret("TFK8S_S3_ENDPOINT", SecretKeyEndpoint, false)
		fromSecret("AWS_ACCESS_KEY_ID", SecretKeyAccessKeyID, false)
		fromSecret("AWS_SECRET_ACCESS_KEY", SecretKeySecretAccessKey, false)
		fromSecret("AWS_REGION", SecretKeyRegion, true)
		fromSecret("TFK8S_S3_INSECURE", SecretKeyInsecure, true)
		if s.ExposeCredentials {
			add("TFK8S_EXPOSE_STORAGE_CREDENTIALS", "true")
		}
	}
	if code := job.Spec.Code; code != nil {
		add("TFK8S_CODE_SOURCE", code.Source)
		add("TFK8S_CODE_SHA256", code.SHA256)
		add("TFK8S_CODE_PATH", codePath(job))
	}
	if len(job.Spec.Data) > 0 {
		add("TFK8S_DATA", mustJSON(job.Spec.Data))
	}
	if a := job.Spec.Artifacts; a != nil {
		add("TFK8S_ARTIFACTS_DESTINATION", a.Destination)
		add("TFK8S_ARTIFACTS_PATHS", mustJSON(a.Paths))
		if a.Interval != nil {
			add("TFK8S_ARTIFACTS_INTERVAL", a.Interval.Duration.String())
		}
		if a.ResumeFrom != "" {
			add("TFK8S_ARTIFACTS_RESUME_FROM", a.ResumeFrom)
		}
	}
	if c.WorkingDir != "" {
		add("TFK8S_WORKDIR", c.WorkingDir)
	}
	add("TFK8S_NAMESPACE", job.Namespace)
	add("TFK8S_JOB_NAME", job.Name)
	add("TFK8S_REPLICA", fmt.Sprintf("%s-%d", strings.ToLower(string(rt)), index))
	add("TFK8S_CONTAINER_NAME", c.Name)
	add("TFK8S_LOG_DIR", agentDir+"/logs")
	fromField := func(name, path string) {
		env = append(env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
		}})
	}
	fromField("TFK8S_POD_NAME", "metadata.name")
	fromField("TFK8S_POD_UID", "metadata.uid")
	return env
}

// codePath is where the code is unpacked.
func codePath(job *tfv1.TFJob) string {
	if job.Spec.Code.Path != "" {
		return job.Spec.Code.Path
	}
	return "/workspace"
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
