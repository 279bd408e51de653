package kubeflowv1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The schema below is training-operator v1.9's, field for field (test/integration/api
// compares it with the CRD v1.9 publishes). What v1.9 checks in its admission webhook is
// said here as CEL rules, so a manifest it refuses is refused at admission too, naming the
// field. The rules that walk every container of every replica type are beyond a CRD's
// CEL budget, since v1.9's schema bounds neither the map nor the lists; they are in the
// admission policy config/policy/kubeflow. A few values v1.9 admitted but could not run
// (an unknown cleanPodPolicy or successPolicy, an unknown replica type) are refused too.

// ReplicaType is a key of spec.tfReplicaSpecs: Chief, Master, PS, Worker or Evaluator,
// in any case ("worker" is Worker), as v1.9 reads them.
type ReplicaType string

// RestartPolicy says what happens when a replica's container exits: Always, OnFailure,
// Never (the default) or ExitCode.
type RestartPolicy string

// CleanPodPolicy says which pods are deleted once the job finished: All, Running or None
// (v1.9's default for a TFJob).
type CleanPodPolicy string

// SuccessPolicy is "" (the chief or master succeeded, else worker 0) or "AllWorkers".
type SuccessPolicy string

// JobConditionType is the type of a condition: Created, Running, Restarting, Succeeded,
// Failed or Suspended.
type JobConditionType string

// TFJob is Kubeflow's TensorFlow training job, reconciled by tfk8s.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.conditions[-1:].type`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (at most 63 lower-case letters, digits and '-', starting with a letter and ending with a letter or digit)"
type TFJob struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the user asks for.
	// +optional
	Spec TFJobSpec `json:"spec,omitempty"`

	// Status is what the controller observed.
	// +optional
	Status JobStatus `json:"status,omitempty"`
}

// TFJobSpec is what the user asks for.
//
// +kubebuilder:validation:XValidation:rule="(has(self.runPolicy) && has(self.runPolicy.managedBy)) == (has(oldSelf.runPolicy) && has(oldSelf.runPolicy.managedBy))",fieldPath=".runPolicy.managedBy",message="spec.runPolicy.managedBy is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.successPolicy) || self.successPolicy in ['AllWorkers'] || size(self.successPolicy) == 0",fieldPath=".successPolicy",message="spec.successPolicy must be \"\" or AllWorkers"
type TFJobSpec struct {
	// RunPolicy says how the job runs: clean-up, deadlines, retries, suspension,
	// scheduling.
	// +kubebuilder:validation:Optional
	RunPolicy RunPolicy `json:"runPolicy"`

	// SuccessPolicy says when the job succeeded; "" by default.
	// +optional
	SuccessPolicy *SuccessPolicy `json:"successPolicy,omitempty"`

	// TFReplicaSpecs maps a replica type (Chief, Master, PS, Worker, Evaluator) to its
	// replicas.
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.lowerAscii() in ['chief', 'master', 'ps', 'worker', 'evaluator'])",message="unknown replica type: the keys of tfReplicaSpecs are Chief, Master, PS, Worker and Evaluator"
	// +kubebuilder:validation:XValidation:rule="!('Chief' in self && 'Master' in self)",message="must not have more than 1 Chief or Master role"
	TFReplicaSpecs map[ReplicaType]*ReplicaSpec `json:"tfReplicaSpecs"`

	// EnableDynamicWorker gives each worker a TF_CONFIG listing only the chief, the PS
	// and itself.
	EnableDynamicWorker bool `json:"enableDynamicWorker,omitempty"`
}

// ReplicaSpec describes a group of identical replicas.
//
// +kubebuilder:validation:XValidation:rule="has(self.template) && has(self.template.spec) && size(self.template.spec.containers) > 0",fieldPath=".template.spec.containers",message="must be specified: a replica runs at least one container"
type ReplicaSpec struct {
	// Replicas is the number of replicas of this type; 1 when unset.
	Replicas *int32 `json:"replicas,omitempty"`

	// Template is the pod of every replica. Its container named tensorflow gets
	// TF_CONFIG and the port tfjob-port.
	Template corev1.PodTemplateSpec `json:"template,omitempty"`

	// RestartPolicy is Always, OnFailure, Never (when unset) or ExitCode.
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`
}

// RunPolicy says how the job runs.
//
// +kubebuilder:validation:XValidation:rule="!has(self.cleanPodPolicy) || size(self.cleanPodPolicy) == 0 || self.cleanPodPolicy in ['All', 'Running', 'None']",fieldPath=".cleanPodPolicy",message="cleanPodPolicy must be All, Running or None"
type RunPolicy struct {
	// CleanPodPolicy says which pods are deleted once the job finished; None when unset.
	CleanPodPolicy *CleanPodPolicy `json:"cleanPodPolicy,omitempty"`

	// TTLSecondsAfterFinished deletes the job this many seconds after it finished.
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// ActiveDeadlineSeconds fails the job once it has run this long.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// BackoffLimit fails the job once its replicas restarted more than this many times.
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// SchedulingPolicy asks for gang scheduling and a priority class.
	// +optional
	SchedulingPolicy *SchedulingPolicy `json:"schedulingPolicy,omitempty"`

	// Suspend deletes the job's pods and keeps its status; false creates them again.
	// Kueue admits a job by setting it to false.
	// +kubebuilder:default:=false
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// ManagedBy names the controller of the job: unset or kubeflow.org/training-operator
	// (tfk8s), or kueue.x-k8s.io/multikueue (left to Kueue). Immutable.
	// +kubebuilder:validation:XValidation:rule="self in ['kubeflow.org/training-operator', 'kueue.x-k8s.io/multikueue']",message="spec.runPolicy.managedBy must be kubeflow.org/training-operator or kueue.x-k8s.io/multikueue"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.runPolicy.managedBy is immutable"
	ManagedBy *string `json:"managedBy,omitempty"`
}

// SchedulingPolicy asks that the job's pods be scheduled together, with a priority.
type SchedulingPolicy struct {
	// MinAvailable is how many pods must be schedulable at once.
	MinAvailable *int32 `json:"minAvailable,omitempty"`
	// Queue is the Volcano queue of the job's PodGroup. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf", message="spec.runPolicy.schedulingPolicy.queue is immutable"
	Queue string `json:"queue,omitempty"`
	// MinResources is the total of resources the gang needs.
	MinResources *map[corev1.ResourceName]resource.Quantity `json:"minResources,omitempty"`
	// PriorityClass is the priority class of the job's pods.
	PriorityClass string `json:"priorityClass,omitempty"`
	// ScheduleTimeoutSeconds is how long the job's pods may wait for a node.
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// JobStatus is what the controller observed, in Kubeflow's shape. The fields after
// lastReconcileTime are tfk8s's own, kept so that the controller counts every pod once
// across restarts; Kubeflow's clients ignore them.
type JobStatus struct {
	// Conditions are the job's states, oldest first.
	Conditions []JobCondition `json:"conditions,omitempty"`

	// ReplicaStatuses counts the pods of each replica type.
	ReplicaStatuses map[ReplicaType]*ReplicaStatus `json:"replicaStatuses,omitempty"`

	// StartTime is when the controller first acted on the job (reset by suspension).
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the job succeeded or failed.
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// LastReconcileTime is when the controller last wrote this status.
	LastReconcileTime *metav1.Time `json:"lastReconcileTime,omitempty"`

	// RecordedPods are finished pods whose outcome this status records and whose
	// tracking finalizer tfk8s is removing.
	// +listType=set
	// +optional
	RecordedPods []types.UID `json:"recordedPods,omitempty"`

	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ReplicaStatus counts the pods of one replica type.
type ReplicaStatus struct {
	// Active is the number of pods pending or running.
	Active int32 `json:"active,omitempty"`
	// Succeeded is the number of replicas that exited 0.
	Succeeded int32 `json:"succeeded,omitempty"`
	// Failed is the number of replicas that failed.
	Failed int32 `json:"failed,omitempty"`
	// LabelSelector selects the pods of this replica type; Selector says the same as a
	// string, which clients should prefer.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Selector selects the pods of this replica type, e.g.
	// "training.kubeflow.org/job-name=mnist,training.kubeflow.org/replica-type=worker".
	Selector string `json:"selector,omitempty"`

	// Restarts counts container restarts and pod re-creations (tfk8s).
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// Disruptions counts the pods re-created after a disruption (tfk8s).
	// +optional
	Disruptions int32 `json:"disruptions,omitempty"`
	// RestartsOfGonePods is the part of Restarts no live pod shows any more (tfk8s).
	// +optional
	RestartsOfGonePods int32 `json:"restartsOfGonePods,omitempty"`
	// SucceededIndexes lists the indexes that succeeded, as "0,2-4" (tfk8s).
	// +optional
	SucceededIndexes string `json:"succeededIndexes,omitempty"`
	// FailedIndexes lists the indexes that failed for good (tfk8s).
	// +optional
	FailedIndexes string `json:"failedIndexes,omitempty"`
	// ImageNotPulledIndexes lists the live replicas whose pod cannot pull an image (tfk8s).
	// +optional
	ImageNotPulledIndexes string `json:"imageNotPulledIndexes,omitempty"`
	// ContainerConfigInvalidIndexes lists the live replicas whose container's config
	// cannot be built (tfk8s).
	// +optional
	ContainerConfigInvalidIndexes string `json:"containerConfigInvalidIndexes,omitempty"`
	// LastFailure is the last container of this type that failed (tfk8s).
	// +optional
	LastFailure *ReplicaFailure `json:"lastFailure,omitempty"`
}

// ReplicaFailure describes a failed container (tfk8s).
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

// JobCondition is one state of the job.
type JobCondition struct {
	// Type is Created, Running, Restarting, Succeeded, Failed or Suspended.
	Type JobConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// Reason is a CamelCase word, such as TFJobRunning.
	Reason string `json:"reason,omitempty"`
	// Message says the same for a person.
	Message string `json:"message,omitempty"`
	// LastUpdateTime is when the condition was last written.
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// LastTransitionTime is when the condition's status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// +kubebuilder:object:root=true

// TFJobList is a list of TFJobs.
type TFJobList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TFJob `json:"items"`
}
