// Package tfjob is the contract between the controller, the agent and the CLI: the
// names, paths, keys and environment variables all three must agree on, written once,
// and the few facts of a TFJob they all derive (its pods' names, its replica counts,
// whether it uses storage). It imports the API types and nothing heavier, so that the
// agent, a static binary in every pod, links little through it.
package tfjob

import (
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// Pods and containers.
const (
	// ContainerName is the container that gets TF_CONFIG and runs under the agent;
	// without one of that name, the first container does.
	ContainerName = "tensorflow"
	// PortName is the name of the container port TensorFlow listens on.
	PortName = "tfjob-port"
	// DefaultPort is TensorFlow's port when no container port is named PortName.
	DefaultPort int32 = 2222
	// EnvTFConfig is the environment variable holding the cluster spec.
	EnvTFConfig = "TF_CONFIG"
	// DefaultCodePath is where the code is unpacked, and the command's working directory.
	DefaultCodePath = "/workspace"
	// AgentDir is the shared volume of the agent's binary and logs in every pod.
	AgentDir = "/tfk8s"
	// AgentLogDir is where the agent writes the command's log in the pod.
	AgentLogDir = AgentDir + "/logs"
)

// Where the chart and config/default install the controller: the namespace and its
// Deployment, which the CLI reads to learn the server's version.
const (
	InstallNamespace     = "tfk8s-system"
	ControllerDeployment = "tfk8s-controller"
)

// Keys of the storage Secret named by spec.storage.secretRef.
const (
	SecretKeyEndpoint        = "endpoint"
	SecretKeyAccessKeyID     = "accessKeyID"
	SecretKeySecretAccessKey = "secretAccessKey"
	SecretKeyRegion          = "region"
	SecretKeyInsecure        = "insecure"
	// SecretKeyBucket is read from the dashboard's runs Secret only: a job's Secret
	// needs none, its spec.artifacts naming the bucket.
	SecretKeyBucket = "bucket"
)

// The S3 settings, as environment variables: the agent reads them (the controller sets
// them from the storage Secret), and the CLI reads them from the user's environment.
const (
	EnvS3Endpoint      = "TFK8S_S3_ENDPOINT"
	EnvS3Bucket        = "TFK8S_S3_BUCKET"
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	EnvRegion          = "AWS_REGION"
	EnvS3Insecure      = "TFK8S_S3_INSECURE"
	// EnvS3Prefix is the key prefix under which the CLI stores and reads everything
	// (code, data, runs): a notebook's key reaches its prefix alone.
	EnvS3Prefix = "TFK8S_S3_PREFIX"
)

// The agent's settings, as the environment variables the controller sets in each pod.
const (
	EnvCodeSource           = "TFK8S_CODE_SOURCE"
	EnvCodeSHA256           = "TFK8S_CODE_SHA256"
	EnvCodePath             = "TFK8S_CODE_PATH"
	EnvData                 = "TFK8S_DATA"
	EnvArtifactsDestination = "TFK8S_ARTIFACTS_DESTINATION"
	EnvArtifactsPaths       = "TFK8S_ARTIFACTS_PATHS"
	EnvArtifactsInterval    = "TFK8S_ARTIFACTS_INTERVAL"
	// EnvArtifactsResumeFrom is the s3:// prefix <destination>/<namespace>/<job>/ of an
	// earlier job, whose replicas' artifacts a first attempt restores.
	EnvArtifactsResumeFrom = "TFK8S_ARTIFACTS_RESUME_FROM"
	EnvNamespace           = "TFK8S_NAMESPACE"
	EnvJobName             = "TFK8S_JOB_NAME"
	// EnvReplica is the replica, as ReplicaName gives it (worker-1).
	EnvReplica            = "TFK8S_REPLICA"
	EnvContainerName      = "TFK8S_CONTAINER_NAME"
	EnvLogDir             = "TFK8S_LOG_DIR"
	EnvWorkDir            = "TFK8S_WORKDIR"
	EnvFinalUploadTimeout = "TFK8S_FINAL_UPLOAD_TIMEOUT"
	// EnvExposeStorageCredentials, when true, passes the S3 settings and credentials on
	// to the user's command.
	EnvExposeStorageCredentials = "TFK8S_EXPOSE_STORAGE_CREDENTIALS"
	// EnvPodName and EnvPodUID name the pod in the attempt records.
	EnvPodName = "TFK8S_POD_NAME"
	EnvPodUID  = "TFK8S_POD_UID"
	// EnvRun is the job's run, RunID of its UID: the replicas store under
	// <destination>/<namespace>/<job>/<run>/.
	EnvRun = "TFK8S_RUN"
	// EnvChildGrace is how long the processes the command left behind get between
	// SIGTERM and SIGKILL once it has exited.
	EnvChildGrace = "TFK8S_CHILD_GRACE"
	// EnvUnpackMaxBytes and EnvUnpackMaxEntries cap what the code archive may unpack
	// to; a user raises them in the container's environment.
	EnvUnpackMaxBytes   = "TFK8S_UNPACK_MAX_BYTES"
	EnvUnpackMaxEntries = "TFK8S_UNPACK_MAX_ENTRIES"
)

// DefaultArtifactsInterval is the time between the agent's uploads when the job sets
// none: how stale the front ends' figures of a running job may be.
const DefaultArtifactsInterval = 60 * time.Second

// TaskType is a replica type as TensorFlow names it in TF_CONFIG: worker, ps, chief.
func TaskType(rt tfv1.ReplicaType) string { return strings.ToLower(string(rt)) }

// RunID names one run of a job, one TFJob object: the first 8 hex digits of its UID,
// dashes removed. A same-name re-submission is a new object, so a new run.
func RunID(uid string) string {
	id := strings.ToLower(strings.ReplaceAll(uid, "-", ""))
	return id[:min(len(id), 8)]
}

// ReplicaName names one replica: <type>-<index>, type in lower case (worker-1).
func ReplicaName(rt tfv1.ReplicaType, index int32) string {
	return TaskType(rt) + "-" + strconv.Itoa(int(index))
}

// PodName is the name of a replica's pod: <job>-<type>-<index>.
func PodName(job string, rt tfv1.ReplicaType, index int32) string {
	return job + "-" + ReplicaName(rt, index)
}

// Replicas is the number of replicas a spec asks for (1 when unset, as defaulted).
func Replicas(spec *tfv1.ReplicaSpec) int32 {
	if spec == nil {
		return 0
	}
	if spec.Replicas == nil {
		return 1
	}
	return *spec.Replicas
}

// TotalReplicas is the number of replicas of the job, all types together.
func TotalReplicas(job *tfv1.TFJob) int32 {
	var n int32
	for _, spec := range job.Spec.TFReplicaSpecs {
		n += Replicas(spec)
	}
	return n
}

// UsesStorage reports whether the job's pods fetch code or data or back artifacts up:
// they run under the agent, which talks to S3.
func UsesStorage(job *tfv1.TFJob) bool {
	return job.Spec.Code != nil || len(job.Spec.Data) > 0 || job.Spec.Artifacts != nil
}

// CodePath is where the job's code is unpacked.
func CodePath(job *tfv1.TFJob) string {
	if job.Spec.Code != nil && job.Spec.Code.Path != "" {
		return job.Spec.Code.Path
	}
	return DefaultCodePath
}

// TensorFlowContainer is the container named "tensorflow", else the first, else nil.
func TensorFlowContainer(cs []corev1.Container) *corev1.Container {
	for i := range cs {
		if cs[i].Name == ContainerName {
			return &cs[i]
		}
	}
	if len(cs) == 0 {
		return nil
	}
	return &cs[0]
}

// SetEnv sets an environment variable of c, replacing one of the same name.
func SetEnv(c *corev1.Container, env corev1.EnvVar) {
	for i := range c.Env {
		if c.Env[i].Name == env.Name {
			c.Env[i] = env
			return
		}
	}
	c.Env = append(c.Env, env)
}

// TensorFlowStatus is the status of the pod's TensorFlow container, or nil.
func TensorFlowStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	name := ContainerName
	if c := TensorFlowContainer(pod.Spec.Containers); c != nil {
		name = c.Name
	}
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// Terminated is the last termination of the pod's TensorFlow container: the current
// one, else the one before its restart; nil if it never ended.
func Terminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	s := TensorFlowStatus(pod)
	if s == nil {
		return nil
	}
	if s.State.Terminated != nil {
		return s.State.Terminated
	}
	return s.LastTerminationState.Terminated
}

// The ports of the workspace beside the jobs: a TensorBoard per job, notebooks per
// namespace. Their labels are in the API package.
const (
	// TensorBoardPort is the port TensorBoard serves on, in its pod and its Service.
	TensorBoardPort int32 = 6006
	// NotebookPort is the port JupyterLab serves on, in its pod and its Service.
	NotebookPort int32 = 8888
)

// TensorBoardName names a job's TensorBoard Deployment and Service.
func TensorBoardName(job string) string { return job + "-tensorboard" }
