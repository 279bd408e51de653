package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ReplicaType is the role a group of replicas plays in a TensorFlow cluster.
// The values are the keys of spec.tfReplicaSpecs, spelled as in Kubeflow's TFJob.
type ReplicaType string

const (
	// ReplicaTypeChief is the worker that also checkpoints and writes summaries.
	ReplicaTypeChief ReplicaType = "Chief"
	// ReplicaTypeMaster is the older name of the chief; TF_CONFIG calls it "master".
	ReplicaTypeMaster ReplicaType = "Master"
	// ReplicaTypePS holds the model variables in parameter-server training.
	ReplicaTypePS ReplicaType = "PS"
	// ReplicaTypeWorker computes gradients.
	ReplicaTypeWorker ReplicaType = "Worker"
	// ReplicaTypeEvaluator evaluates checkpoints beside training; it is not part of the cluster.
	ReplicaTypeEvaluator ReplicaType = "Evaluator"
)

// ReplicaTypes lists every replica type in the order tfk8s creates and reports them.
var ReplicaTypes = []ReplicaType{ReplicaTypeChief, ReplicaTypeMaster, ReplicaTypePS, ReplicaTypeWorker, ReplicaTypeEvaluator}

// RestartPolicy says what happens when a replica's container exits.
// +kubebuilder:validation:Enum=Always;OnFailure;Never;ExitCode
type RestartPolicy string

const (
	// RestartPolicyAlways restarts the container whatever its exit code.
	RestartPolicyAlways RestartPolicy = "Always"
	// RestartPolicyOnFailure restarts the container when it exits non-zero.
	RestartPolicyOnFailure RestartPolicy = "OnFailure"
	// RestartPolicyNever lets a failed replica fail the job.
	RestartPolicyNever RestartPolicy = "Never"
	// RestartPolicyExitCode re-creates the pod after a retryable failure (exit code 128 and
	// above: killed by a signal, or a pod disruption such as eviction, preemption or node
	// loss); exit codes 1 to 127 fail the replica permanently.
	RestartPolicyExitCode RestartPolicy = "ExitCode"
)

// CleanPodPolicy says which pods are deleted once the job has finished.
// +kubebuilder:validation:Enum=All;Running;None
type CleanPodPolicy string

const (
	// CleanPodPolicyAll deletes every pod of the job when it finishes.
	CleanPodPolicyAll CleanPodPolicy = "All"
	// CleanPodPolicyRunning deletes the pods still running when the job finishes: the
	// parameter servers, which never exit by themselves, are recycled this way.
	CleanPodPolicyRunning CleanPodPolicy = "Running"
	// CleanPodPolicyNone keeps every pod.
	CleanPodPolicyNone CleanPodPolicy = "None"
)

// SuccessPolicy says when a job has succeeded.
// +kubebuilder:validation:Enum="";AllWorkers
type SuccessPolicy string

const (
	// SuccessPolicyDefault: the chief (or master) succeeded, or worker 0 when there is neither.
	SuccessPolicyDefault SuccessPolicy = ""
	// SuccessPolicyAllWorkers: every worker (and the chief or master, if any) succeeded.
	SuccessPolicyAllWorkers SuccessPolicy = "AllWorkers"
)

// StartupPolicy says in which order the replicas' pods are created.
// +kubebuilder:validation:Enum=Parallel;PSFirst
type StartupPolicy string

const (
	// StartupPolicyParallel creates every pod at once.
	StartupPolicyParallel StartupPolicy = "Parallel"
	// StartupPolicyPSFirst creates the chief, master and workers once every PS pod is Running.
	StartupPolicyPSFirst StartupPolicy = "PSFirst"
)

// NetworkingMode says how replicas reach each other.
// +kubebuilder:validation:Enum=DNS;HostNetwork
type NetworkingMode string

const (
	// NetworkingModeDNS gives every pod a stable name under the job's headless Service.
	NetworkingModeDNS NetworkingMode = "DNS"
	// NetworkingModeHostNetwork runs pods in the node's network with a distinct port per replica.
	NetworkingModeHostNetwork NetworkingMode = "HostNetwork"
)

// TFJob is a TensorFlow training job: one or more groups of replicas (chief or master,
// parameter servers, workers, an evaluator) that tfk8s runs as pods, wiring them
// together with a generated TF_CONFIG.
//
// The job name ends up in the name of every pod, "<name>-<type>-<index>", which must be
// a DNS label of at most 63 characters. So a name may have at most
// 63 - len("-<type>-<highest index>") characters: 51 with an evaluator ("-evaluator-0") or
// TensorBoard ("-tensorboard"), 52 with up to 1000 workers ("-worker-999"), 54 with up to
// 10 workers ("-worker-9").
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tfj,categories=all
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Workers",type=integer,JSONPath=`.spec.tfReplicaSpecs.Worker.replicas`
// +kubebuilder:printcolumn:name="PS",type=integer,JSONPath=`.spec.tfReplicaSpecs.PS.replicas`
// +kubebuilder:printcolumn:name="Step",type=integer,JSONPath=`.status.progress.step`
// +kubebuilder:printcolumn:name="Progress",type=integer,JSONPath=`.status.progress.progressPercentage`,description="Percent of the total steps, when the program said the total"
// +kubebuilder:printcolumn:name="ETA",type=integer,JSONPath=`.status.progress.estimatedRemainingSeconds`,description="Seconds left at the recent step rate"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit): it names the job's Service"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.tfReplicaSpecs) || self.spec.tfReplicaSpecs.all(t, r, size(self.metadata.name) + size(t) + 2 + size(string(has(r.replicas) && r.replicas > 1 ? r.replicas - 1 : 0)) <= 63)",message="metadata.name is too long: every pod name <name>-<type>-<index> must fit in a 63-character DNS label"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.tensorboard) || !self.spec.tensorboard.enabled || size(self.metadata.name) <= 51",message="metadata.name is too long for spec.tensorboard: <name>-tensorboard must fit in a 63-character DNS label"
type TFJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   TFJobSpec   `json:"spec"`
	Status TFJobStatus `json:"status,omitempty"`
}

// TFJobSpec is what the user asks for. Its fields are a superset of Kubeflow's TFJob v1
// spec, so a kubeflow.org/v1 manifest is a valid tfk8s.io/v1alpha1 one once its
// apiVersion is rewritten.
//
// +kubebuilder:validation:XValidation:rule="!('Chief' in self.tfReplicaSpecs) || self.tfReplicaSpecs['Chief'].replicas <= 1",fieldPath=".tfReplicaSpecs.Chief.replicas",message="a job has at most one Chief"
// +kubebuilder:validation:XValidation:rule="!('Master' in self.tfReplicaSpecs) || self.tfReplicaSpecs['Master'].replicas <= 1",fieldPath=".tfReplicaSpecs.Master.replicas",message="a job has at most one Master"
// +kubebuilder:validation:XValidation:rule="!('Evaluator' in self.tfReplicaSpecs) || self.tfReplicaSpecs['Evaluator'].replicas <= 1",fieldPath=".tfReplicaSpecs.Evaluator.replicas",message="a job has at most one Evaluator (TensorFlow allows one)"
// +kubebuilder:validation:XValidation:rule="!(has(self.code) || has(self.data) || has(self.artifacts)) || has(self.storage)",fieldPath=".storage",message="spec.storage.secretRef is required when code, data or artifacts are set: it holds the S3 endpoint and credentials"
// +kubebuilder:validation:XValidation:rule="has(self.code) == has(oldSelf.code)",fieldPath=".code",message="spec.code is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.data) == has(oldSelf.data)",fieldPath=".data",message="spec.data is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.artifacts) == has(oldSelf.artifacts)",fieldPath=".artifacts",message="spec.artifacts is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.storage) == has(oldSelf.storage)",fieldPath=".storage",message="spec.storage is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.volumes) == has(oldSelf.volumes)",fieldPath=".volumes",message="spec.volumes is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.volumes) || self.volumes.all(v, v.mountPath != '/tfk8s' && !v.mountPath.startsWith('/tfk8s/'))",fieldPath=".volumes",message="a volume's mountPath may not be /tfk8s or under it: the tfk8s agent's directory"
// +kubebuilder:validation:XValidation:rule="!has(self.volumes) || !has(self.code) || self.volumes.all(v, v.mountPath != (has(self.code.path) ? self.code.path : '/workspace'))",fieldPath=".volumes",message="a volume's mountPath is spec.code.path, where the code is unpacked"
// +kubebuilder:validation:XValidation:rule="!has(self.volumes) || !has(self.data) || self.volumes.all(v, self.data.all(d, d.path != v.mountPath))",fieldPath=".volumes",message="a volume's mountPath is the path of one of spec.data"
// +kubebuilder:validation:XValidation:rule="!has(self.tensorboard) || !self.tensorboard.enabled || !has(self.tensorboard.logDir) || !self.tensorboard.logDir.startsWith('s3://') || has(self.storage)",fieldPath=".tensorboard.logDir",message="an s3:// logDir needs spec.storage.secretRef: the TensorBoard's mirror reads S3 with it"
// +kubebuilder:validation:XValidation:rule="!has(self.tensorboard) || !self.tensorboard.enabled || !has(self.tensorboard.logDir) || !self.tensorboard.logDir.startsWith('/') || (has(self.volumes) && self.volumes.exists(v, self.tensorboard.logDir == v.mountPath || self.tensorboard.logDir.startsWith(v.mountPath + '/')))",fieldPath=".tensorboard.logDir",message="logDir is not in any of spec.volumes: TensorBoard runs in a pod of its own and sees only the job's volumes"
// +kubebuilder:validation:XValidation:rule="!has(self.tensorboard) || !self.tensorboard.enabled || has(self.tensorboard.logDir) || (has(self.artifacts) && has(self.artifacts.paths) && size(self.artifacts.paths) > 0) || (has(self.volumes) && self.volumes.exists(v, v.name == 'logs'))",fieldPath=".tensorboard",message="TensorBoard has no summaries to read: set spec.artifacts.paths (what they back up is mirrored from S3; without paths only logs are), a volume named logs, or tensorboard.logDir"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy.schedulingPolicy) || !has(self.runPolicy.schedulingPolicy.minAvailable) || self.runPolicy.schedulingPolicy.minAvailable <= self.tfReplicaSpecs.map(t, has(self.tfReplicaSpecs[t].replicas) ? self.tfReplicaSpecs[t].replicas : 1).sum()",fieldPath=".runPolicy.schedulingPolicy.minAvailable",message="minAvailable is more than the job's replicas: a gang that large is never scheduled"
// +kubebuilder:validation:XValidation:rule="has(self.successPolicy) == has(oldSelf.successPolicy)",fieldPath=".successPolicy",message="spec.successPolicy is immutable"
type TFJobSpec struct {
	// Immutability of tfReplicaSpecs is checked by the ValidatingAdmissionPolicy in
	// config/policy: as a CRD rule it would compare every pod template on every status
	// write. The rules that need no field path of their own sit on the map rather than on
	// the spec: the API server looks each field of an object up through a fresh copy of
	// its schema's properties, so a rule written against the narrowest object costs it
	// least on every write. (A field path under a map key is rendered ".[Chief]" there.)

	// TFReplicaSpecs maps a replica type (Chief, Master, PS, Worker, Evaluator) to its
	// replicas. Immutable: TF_CONFIG describes the whole cluster to every replica.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=5
	// +kubebuilder:validation:XValidation:rule="self.all(t, t in ['Chief', 'Master', 'PS', 'Worker', 'Evaluator'])",message="unknown replica type: the keys of tfReplicaSpecs are Chief, Master, PS, Worker and Evaluator"
	// +kubebuilder:validation:XValidation:rule="!('Chief' in self && 'Master' in self)",message="Chief and Master cannot both be set: they are two names for the same role"
	// +kubebuilder:validation:XValidation:rule="'Chief' in self || 'Master' in self || 'Worker' in self",message="a job needs a Chief, a Master or a Worker: PS and Evaluator replicas alone do not train"
	// +required
	TFReplicaSpecs map[ReplicaType]*ReplicaSpec `json:"tfReplicaSpecs"`

	// RunPolicy says how the job runs: clean-up, deadlines, retries, suspension, gang scheduling.
	// Its defaults are set at admission, so the stored job shows them.
	// +kubebuilder:default={}
	// +optional
	RunPolicy RunPolicy `json:"runPolicy,omitempty"`

	// SuccessPolicy says when the job has succeeded: "" (the chief or master succeeded, or
	// worker 0 when there is neither) or "AllWorkers".
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.successPolicy is immutable"
	SuccessPolicy *SuccessPolicy `json:"successPolicy,omitempty"`

	// EnableDynamicWorker gives each worker a TF_CONFIG whose cluster lists only the
	// chief, the PS and the worker itself (Kubeflow's sparse cluster spec), so that no
	// worker depends on another's address. The number of workers stays fixed:
	// tfReplicaSpecs is immutable.
	// +optional
	EnableDynamicWorker bool `json:"enableDynamicWorker,omitempty"`

	// StartupPolicy is Parallel (every pod at once) or PSFirst (chief, master and workers
	// once every PS pod is Running).
	// +kubebuilder:default=Parallel
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.startupPolicy is immutable"
	StartupPolicy StartupPolicy `json:"startupPolicy,omitempty"`

	// Networking says how replicas reach each other.
	// +kubebuilder:default={mode: DNS}
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.networking is immutable"
	Networking Networking `json:"networking,omitempty"`

	// Storage names the S3-compatible storage holding code, data and artifacts.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.storage is immutable"
	Storage *Storage `json:"storage,omitempty"`

	// Code is the user's program, an archive fetched and unpacked in every container
	// before its command starts.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.code is immutable"
	Code *Code `json:"code,omitempty"`

	// Data lists S3 prefixes copied into every container before its command starts.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.data is immutable"
	Data []DataSource `json:"data,omitempty"`

	// Artifacts says which paths (checkpoints, exported models) are backed up to S3
	// while the job runs and when each container stops. Container logs go along.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.destination == oldSelf.destination && has(self.paths) == has(oldSelf.paths) && (!has(self.paths) || self.paths == oldSelf.paths) && has(self.interval) == has(oldSelf.interval) && (!has(self.interval) || duration(self.interval) == duration(oldSelf.interval)) && has(self.resumeFrom) == has(oldSelf.resumeFrom) && (!has(self.resumeFrom) || self.resumeFrom == oldSelf.resumeFrom)",message="spec.artifacts is immutable"
	Artifacts *Artifacts `json:"artifacts,omitempty"`

	// Volumes are persistent volume claims mounted in every container of every replica:
	// a claim of <job>-<name> that tfk8s creates and deletes with the job (unless
	// retain), or an existing claim. TensorBoard reads the one named "logs" when it has
	// no logDir of its own.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(v, self.exists_one(w, w.mountPath == v.mountPath))",message="two volumes have the same mountPath"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.volumes is immutable"
	// +optional
	Volumes []JobVolume `json:"volumes,omitempty"`

	// TensorBoard runs a TensorBoard beside the job, reading its summaries.
	// +optional
	TensorBoard *TensorBoard `json:"tensorboard,omitempty"`
}

// ReplicaSpec describes a group of identical replicas.
// With a deviceClaim, no resourceClaim of the template may be named tfk8s-devices:
// that is the pod's claim tfk8s makes from the deviceClaim.
// +kubebuilder:validation:XValidation:rule="!has(self.deviceClaim) || !has(self.template.spec) || !has(self.template.spec.resourceClaims) || self.template.spec.resourceClaims.all(c, c.name != 'tfk8s-devices')",fieldPath=".template.spec.resourceClaims",message="the resourceClaim name tfk8s-devices is the claim tfk8s makes from deviceClaim: rename the template's own claim"
type ReplicaSpec struct {
	// Replicas is the number of replicas of this type.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// The template's spec is required and lists at least one container: hack/crdschema
	// writes both into the CRD as OpenAPI (required, minItems), which no marker can say
	// of the fields of a Kubernetes type, and which costs the API server less than CEL.

	// Template is the pod of every replica; its spec lists at least one container. The
	// container named "tensorflow" (else the first container) gets TF_CONFIG and, when
	// code or artifacts are set, runs under the tfk8s agent.
	// +required
	Template corev1.PodTemplateSpec `json:"template"`

	// RestartPolicy is Always, OnFailure, Never (the default) or ExitCode.
	// +kubebuilder:default=Never
	// +optional
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`

	// DeviceClaim gives each replica of this type devices of its own by Dynamic
	// Resource Allocation, through a ResourceClaimTemplate tfk8s makes and deletes with
	// the job. The template's own resourceClaims pass through unchanged beside it.
	// +optional
	DeviceClaim *DeviceClaim `json:"deviceClaim,omitempty"`
}

// RunPolicy says how the job runs. Its fields are Kubeflow's.
type RunPolicy struct {
	// CleanPodPolicy says which pods are deleted once the job finished: Running (the
	// default: the parameter servers and every other pod still running), All or None.
	// +kubebuilder:default=Running
	// +optional
	CleanPodPolicy *CleanPodPolicy `json:"cleanPodPolicy,omitempty"`

	// TTLSecondsAfterFinished deletes the job, and with it every object it owns, this
	// many seconds after it finished. Unset keeps it.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// ActiveDeadlineSeconds fails the job once it has been running this long.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// BackoffLimit fails the job once its replicas restarted more than this many times in
	// all, counting container restarts and pod re-creations alike. Default 6, as for a
	// Kubernetes Job.
	// +kubebuilder:default=6
	// +kubebuilder:validation:Minimum=0
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// SchedulingPolicy asks for gang scheduling.
	// +optional
	SchedulingPolicy *SchedulingPolicy `json:"schedulingPolicy,omitempty"`

	// Suspend deletes the job's pods and keeps its status; setting it back to false
	// creates them again.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// ManagedBy names the controller that reconciles this job; tfk8s leaves alone a job
	// managed by another. Unset or "tfk8s.io/tfjob-controller" means tfk8s.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="runPolicy.managedBy is immutable"
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`
}

// SchedulingPolicy asks that the job's pods be scheduled together or not at all. A field
// the job's gang scheduler has no use for is refused here when the job names its
// provider; when the controller's --gang-scheduler decides, the job gets the condition
// FieldsIgnored and a Warning event naming the field.
// +kubebuilder:validation:XValidation:rule="!has(self.queue) || size(self.queue) == 0 || !has(self.provider) || self.provider == 'volcano'",fieldPath=".queue",message="queue is for provider volcano only: native and scheduler-plugins gangs have no queue (for a Kueue queue, label the job kueue.x-k8s.io/queue-name)"
// +kubebuilder:validation:XValidation:rule="!has(self.minResources) || size(self.minResources) == 0 || !has(self.provider) || self.provider != 'native'",fieldPath=".minResources",message="minResources is for providers volcano and scheduler-plugins: a native PodGroup has no minimum of resources"
// +kubebuilder:validation:XValidation:rule="!has(self.onScheduleTimeout) || has(self.scheduleTimeoutSeconds)",fieldPath=".onScheduleTimeout",message="onScheduleTimeout needs scheduleTimeoutSeconds: it says what happens when that timeout passes"
type SchedulingPolicy struct {
	// Provider is the gang scheduler that places the job's pods all at once or not at
	// all: "native" (Kubernetes' own scheduling.k8s.io PodGroup), "volcano" (Volcano's
	// PodGroup and scheduler), "scheduler-plugins" (the coscheduling plugin's
	// PodGroup), or unset for the controller's --gang-scheduler (default none: pods are
	// scheduled one by one). The job is refused at reconcile, with a condition, when the
	// provider's API is not served.
	// +kubebuilder:validation:Enum=native;volcano;scheduler-plugins
	// +optional
	Provider GangProvider `json:"provider,omitempty"`
	// MinAvailable is how many pods must be schedulable at once, at most the job's
	// replicas. Unset or 0: every replica. Needs a gang scheduler.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`
	// Queue is the Volcano queue the job's PodGroup joins; provider volcano only.
	// +optional
	Queue string `json:"queue,omitempty"`
	// MinResources is the total of resources the gang needs, for providers volcano and
	// scheduler-plugins; unset, the sum of every replica's requests.
	// +optional
	MinResources corev1.ResourceList `json:"minResources,omitempty"`
	// PriorityClass is the priority class of the job's pods (and of its Volcano
	// PodGroup), with or without a gang scheduler; a replica whose template names its
	// own priorityClassName keeps it.
	// +optional
	PriorityClass string `json:"priorityClass,omitempty"`
	// ScheduleTimeoutSeconds is how long the job's pods may wait for a node; tfk8s
	// enforces it with or without a gang scheduler (see onScheduleTimeout).
	// +kubebuilder:validation:Minimum=0
	// +optional
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
	// OnScheduleTimeout is what happens to a job whose pods were not all scheduled
	// within scheduleTimeoutSeconds: Fail (the default) fails it for good; Suspend
	// deletes its pods and sets runPolicy.suspend, so that the capacity it held goes to
	// others and `tfk8s resume` tries again. Either way the condition (Failed or
	// Suspended, reason GangScheduleTimeout) names the pods and the scheduler's reason.
	// +kubebuilder:validation:Enum=Fail;Suspend
	// +optional
	OnScheduleTimeout ScheduleTimeoutAction `json:"onScheduleTimeout,omitempty"`
}

// ScheduleTimeoutAction is what tfk8s does with a job not scheduled in time.
type ScheduleTimeoutAction string

// The actions of schedulingPolicy.onScheduleTimeout.
const (
	ScheduleTimeoutFail    ScheduleTimeoutAction = "Fail"
	ScheduleTimeoutSuspend ScheduleTimeoutAction = "Suspend"
)

// GangProvider names a gang scheduler.
type GangProvider string

// The gang schedulers tfk8s creates groups for.
const (
	GangProviderNative           GangProvider = "native"
	GangProviderVolcano          GangProvider = "volcano"
	GangProviderSchedulerPlugins GangProvider = "scheduler-plugins"
)

// Networking says how replicas reach each other.
type Networking struct {
	// Mode is DNS (pods named under the job's headless Service, every one on the
	// TensorFlow port) or HostNetwork (pods in the node's network, each replica on its
	// own port).
	// +kubebuilder:default=DNS
	// +optional
	Mode NetworkingMode `json:"mode,omitempty"`
}

// Storage names the S3-compatible storage of a job.
type Storage struct {
	// SecretRef names a Secret in the job's namespace with the keys endpoint,
	// accessKeyID and secretAccessKey, and optionally region and insecure ("true" for
	// plain HTTP). Credentials never appear in the TFJob itself.
	// +required
	SecretRef corev1.LocalObjectReference `json:"secretRef"`
	// ExposeCredentials passes the S3 settings and credentials (AWS_ACCESS_KEY_ID, ...)
	// on to the user's command. Off by default: the agent alone uses them, so that a
	// program printing its environment does not write them into its stored log.
	// +optional
	ExposeCredentials bool `json:"exposeCredentials,omitempty"`
}

// Code is an archive of the user's program.
type Code struct {
	// Source is the archive, a gzipped tar: s3://bucket/key.
	// +kubebuilder:validation:Pattern=`^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+[^/]$`
	// +required
	Source string `json:"source"`
	// SHA256 is the archive's digest, checked before it is unpacked; by default the
	// digest in its content-addressed name (".../sha256-<hex>.tar.gz").
	// +kubebuilder:validation:Pattern=`^[a-f0-9]{64}$`
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// Path is where the archive is unpacked, and the command's working directory unless
	// the container sets one.
	// +kubebuilder:default=/workspace
	// +kubebuilder:validation:Pattern=`^/`
	// +optional
	Path string `json:"path,omitempty"`
}

// DataSource is an S3 prefix copied into each container.
type DataSource struct {
	// Source is an S3 prefix (s3://bucket/prefix/) or object (s3://bucket/key).
	// +kubebuilder:validation:Pattern=`^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$`
	// +required
	Source string `json:"source"`
	// Path is the absolute directory the data appears in.
	// +kubebuilder:validation:Pattern=`^/`
	// +required
	Path string `json:"path"`
}

// Artifacts says what is backed up to S3, where and how often.
type Artifacts struct {
	// Destination is the S3 prefix under which each replica's artifacts and logs are
	// stored, as <destination>/<namespace>/<job>/<replica>/{artifacts,logs}/.
	// +kubebuilder:validation:Pattern=`^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$`
	// +required
	Destination string `json:"destination"`
	// Paths are the absolute files or directories uploaded (changed files only).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^/`
	// +listType=atomic
	// +optional
	Paths []string `json:"paths,omitempty"`
	// Interval is the time between two uploads while the command runs; 0 uploads only
	// when the container stops.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="artifacts.interval must not be negative"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// ResumeFrom is the artifacts prefix of an earlier job, <destination>/<namespace>/<job>/:
	// before a replica's first attempt, its artifact paths are restored from the same
	// replica of that job (a retried attempt restores from its own predecessor), so
	// that TensorFlow resumes from the latest checkpoint.
	// +kubebuilder:validation:Pattern=`^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.*/$`
	// +optional
	ResumeFrom string `json:"resumeFrom,omitempty"`
}

// JobVolume is a persistent volume claim mounted in every replica.
//
// +kubebuilder:validation:XValidation:rule="has(self.existingClaim) != has(self.size)",message="a volume needs either size (tfk8s creates its claim) or existingClaim, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.existingClaim) || (!has(self.storageClassName) && !has(self.accessModes) && !(has(self.retain) && self.retain))",message="storageClassName, accessModes and retain are for the claims tfk8s creates, not for an existingClaim"
type JobVolume struct {
	// Name names the volume; the claim tfk8s creates is <job>-<name>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
	// MountPath is where the volume appears in every container; not the code path, a
	// data path or tfk8s's own /tfk8s.
	// +kubebuilder:validation:Pattern=`^/.`
	// +kubebuilder:validation:MaxLength=1024
	// +required
	MountPath string `json:"mountPath"`
	// ReadOnly mounts the volume read-only in every container.
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`
	// Size is the storage requested for the claim tfk8s creates.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="size must be greater than zero"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// StorageClassName is the created claim's storage class; unset uses the cluster's
	// default class. A class that does not exist fails the job.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// AccessModes of the created claim; default ReadWriteMany, since replicas on
	// several nodes mount it.
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	// +optional
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// Retain keeps the created claim when the job is deleted; a later job of the same
	// name and volume mounts it again.
	// +optional
	Retain bool `json:"retain,omitempty"`
	// ExistingClaim mounts a claim of the job's namespace that tfk8s neither creates nor
	// deletes. A claim that does not exist fails the job.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ExistingClaim string `json:"existingClaim,omitempty"`
}

// TensorBoard runs a TensorBoard Deployment and Service beside the job. It starts with
// the job, follows the summaries while the job runs, and stays for
// ttlSecondsAfterFinished once the job finished.
//
// +kubebuilder:validation:XValidation:rule="!has(self.logDir) || self.logDir.startsWith('s3://') || self.logDir.startsWith('/')",fieldPath=".logDir",message="logDir is an s3:// prefix or an absolute path in one of spec.volumes"
type TensorBoard struct {
	// Enabled turns TensorBoard on.
	Enabled bool `json:"enabled"`
	// Image runs TensorBoard; default the controller's --tensorboard-image, tfk8s's
	// TensorFlow image.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`
	// LogDir is what TensorBoard reads: an s3:// prefix (mirrored into the TensorBoard
	// pod by the tfk8s agent), or a directory in one of spec.volumes (mounted
	// read-only). Default: the volume named "logs" if the job has one, else the job's
	// artifacts, <artifacts.destination>/<namespace>/<job>/, mirrored from S3.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	LogDir string `json:"logDir,omitempty"`
	// TTLSecondsAfterFinished is how long TensorBoard stays once the job finished (or
	// since `tfk8s tensorboard` last asked for it, whichever is later).
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// TensorBoardStatus says where the job's TensorBoard is.
type TensorBoardStatus struct {
	// ServiceName is the TensorBoard's Service, in the job's namespace.
	ServiceName string `json:"serviceName"`
	// URL is the TensorBoard's address inside the cluster; `tfk8s tensorboard JOB`
	// opens it from outside.
	URL string `json:"url"`
	// Ready is true once TensorBoard serves.
	Ready bool `json:"ready"`
	// ExpiresAt is when tfk8s deletes the TensorBoard, once the job finished.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
}

// JobState is a one-word summary of a job, shown by kubectl and the tfk8s CLI.
type JobState string

// TFJobStatus is what tfk8s observed of a job.
type TFJobStatus struct {
	// State is the newest of the job's true conditions: Created, Running, Restarting,
	// Suspended, Succeeded or Failed.
	// +optional
	State JobState `json:"state,omitempty"`

	// Conditions, of types Created, Running, Restarting, Succeeded, Failed and Suspended
	// (the states), and PodCreationRefused, ReplicasWaiting and FieldsIgnored, which say
	// why the job waits or what it ignores and never become its state.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ReplicaStatuses counts the pods of each replica type.
	// +optional
	ReplicaStatuses map[ReplicaType]*ReplicaStatus `json:"replicaStatuses,omitempty"`

	// StartTime is when tfk8s first acted on the job.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the job succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// RecordedPods are finished pods whose outcome this status records and whose
	// tracking finalizer tfk8s is removing; each is counted once.
	// +listType=set
	// +optional
	RecordedPods []types.UID `json:"recordedPods,omitempty"`

	// TensorBoard says where the job's TensorBoard is, while it exists.
	// +optional
	TensorBoard *TensorBoardStatus `json:"tensorBoard,omitempty"`

	// Progress is how far training has got, while the lead replica's agent reports
	// it (jobs with artifacts, not on the host's network); the last report stays once
	// the job has finished.
	// +optional
	Progress *TrainingProgress `json:"progress,omitempty"`

	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ReplicaStatus counts the pods of one replica type.
type ReplicaStatus struct {
	// Active is the number of pods pending or running.
	// +optional
	Active int32 `json:"active,omitempty"`
	// Succeeded is the number of replicas that exited 0.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// Failed is the number of replicas that failed for good.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// Restarts counts container restarts and pod re-creations.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// Disruptions counts the pods re-created because something outside the program
	// removed them: preemption, eviction, a node drained or lost, a gang scheduler, or a
	// deletion before the pod was bound to a node. They are not in Restarts, and never
	// count against runPolicy.backoffLimit.
	// +optional
	Disruptions int32 `json:"disruptions,omitempty"`
	// RestartsOfGonePods is the part of Restarts that no live pod shows any more: pod
	// re-creations, and the container restarts of pods since deleted.
	// +optional
	RestartsOfGonePods int32 `json:"restartsOfGonePods,omitempty"`
	// SucceededIndexes lists the indexes that succeeded, as "0,2-4": they are never run
	// again, even once their pods are gone.
	// +optional
	SucceededIndexes string `json:"succeededIndexes,omitempty"`
	// FailedIndexes lists the indexes that failed for good, in the same form.
	// +optional
	FailedIndexes string `json:"failedIndexes,omitempty"`
	// ImageNotPulledIndexes lists, in the same form, the live replicas whose pod cannot
	// pull an image, every one of them: events name the first three of a type and
	// count the others waiting by then.
	// +optional
	ImageNotPulledIndexes string `json:"imageNotPulledIndexes,omitempty"`
	// ContainerConfigInvalidIndexes lists, in the same form, the live replicas whose
	// container's config cannot be built (a Secret, ConfigMap or key is missing).
	// +optional
	ContainerConfigInvalidIndexes string `json:"containerConfigInvalidIndexes,omitempty"`
	// LastFailure is the last container of this type that failed.
	// +optional
	LastFailure *ReplicaFailure `json:"lastFailure,omitempty"`
}

// ReplicaFailure describes a failed container.
type ReplicaFailure struct {
	// Index is the replica's index.
	Index int32 `json:"index"`
	// Pod is the pod's name.
	Pod string `json:"pod"`
	// ExitCode is the container's exit code.
	ExitCode int32 `json:"exitCode"`
	// Reason is the container's or the pod's reason, e.g. Error, OOMKilled, Evicted.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is the container's or the pod's message, truncated.
	// +optional
	Message string `json:"message,omitempty"`
	// Time is when the failure was seen.
	Time metav1.Time `json:"time"`
}

// +kubebuilder:object:root=true

// TFJobList is a list of TFJobs.
type TFJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TFJob `json:"items"`
}
