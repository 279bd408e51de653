package v1alpha1

// Condition types of a TFJob, with Kubeflow's names. A job is Created, then Running (or
// Restarting while a replica is being restarted), and ends Succeeded or Failed; both
// terminal conditions are sticky. Suspended is true while runPolicy.suspend is.
const (
	JobCreated    JobState = "Created"
	JobRunning    JobState = "Running"
	JobRestarting JobState = "Restarting"
	JobSucceeded  JobState = "Succeeded"
	JobFailed     JobState = "Failed"
	JobSuspended  JobState = "Suspended"
)

// Reasons of conditions and events. Each is CamelCase and documented where it is set.
const (
	// ReasonCreated: the job was accepted and its pods are being created.
	ReasonCreated = "TFJobCreated"
	// ReasonRunning: every replica that should run is running.
	ReasonRunning = "TFJobRunning"
	// ReasonRestarting: a replica is being restarted after a retryable failure.
	ReasonRestarting = "TFJobRestarting"
	// ReasonSucceeded: the success policy is met.
	ReasonSucceeded = "TFJobSucceeded"
	// ReasonFailed: a replica failed for good.
	ReasonFailed = "TFJobFailed"
	// ReasonBackoffLimitExceeded: the replicas restarted more than runPolicy.backoffLimit times.
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	// ReasonDeadlineExceeded: the job ran longer than runPolicy.activeDeadlineSeconds.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonSuspended: runPolicy.suspend is true; the job's pods were deleted.
	ReasonSuspended = "TFJobSuspended"
	// ReasonResumed: runPolicy.suspend was set back to false.
	ReasonResumed = "TFJobResumed"
	// ReasonEvaluatorFailed: the evaluator failed; training goes on without it.
	ReasonEvaluatorFailed = "EvaluatorFailed"
	// ReasonPodNameTaken: pods of an earlier job of the same name still hold the names
	// of this job's pods; tfk8s deletes them, and creates this job's pods once they are gone.
	ReasonPodNameTaken = "PodNameTaken"
	// ReasonRetryBackoff: a failed replica is re-created after a delay that doubles with
	// each failure in a row (10s up to 6m).
	ReasonRetryBackoff = "RetryBackoff"
	// ReasonInvalidVolume: one of spec.volumes names a storage class or an existing
	// claim that does not exist; the job fails before any pod is created.
	ReasonInvalidVolume = "InvalidVolume"
	// ReasonInvalidDeviceClaim: the API server refused the ResourceClaimTemplate made
	// from a replica type's deviceClaim (a selector that does not compile, most often),
	// or its name is taken; the job fails before any pod is created.
	ReasonInvalidDeviceClaim = "InvalidDeviceClaim"
	// ReasonGangSchedulerUnavailable: the job's gang scheduler does not serve its API
	// in this cluster, so the job is failed before any pod is created without its group.
	ReasonGangSchedulerUnavailable = "GangSchedulerUnavailable"
	// ReasonGangScheduleTimeout: some pods of the job were not bound to a node within
	// runPolicy.schedulingPolicy.scheduleTimeoutSeconds.
	ReasonGangScheduleTimeout = "GangScheduleTimeout"
	// ReasonDisrupted: a pod was preempted, evicted, drained or deleted before it was
	// bound; it is re-created and not counted against runPolicy.backoffLimit.
	ReasonDisrupted = "Disrupted"
	// ReasonQueued: the job waits for Kueue to admit its Workload; it has no pods.
	ReasonQueued = "Queued"
	// ReasonPreempted: Kueue evicted the job's Workload (preempted it, most often); its
	// pods are deleted, uncounted, and it waits to be admitted again.
	ReasonPreempted = "Preempted"
	// ReasonKueueUnavailable: the job names a Kueue queue on a cluster that does not
	// serve Kueue's Workload API.
	ReasonKueueUnavailable = "KueueUnavailable"
	// ReasonTFConfigTooLarge: the job's TF_CONFIG would pass the size a pod without
	// tfk8s's agent may carry inline; the job fails before any pod is created.
	ReasonTFConfigTooLarge = "TFConfigTooLarge"
	// ReasonAgentPodRefused: a replica of a job run by tfk8s's agent asks for what
	// would expose the agent (shareProcessNamespace); the job fails before any pod.
	ReasonAgentPodRefused = "AgentPodRefused"
	// ReasonJobNameTaken: a TFJob of the other API (tfk8s.io or kubeflow.org) with the
	// same name in the namespace was created first; its pods and Service have the names
	// this job's would need, so this job fails before any pod, and leaves them alone.
	ReasonJobNameTaken = "JobNameTaken"
)

// Annotations tfk8s puts on pods.
const (
	// AnnotationFailuresInARow is how many times in a row the replica failed and was
	// re-created before this pod; it sets the delay before the next re-creation.
	AnnotationFailuresInARow = "tfk8s.io/failures-in-a-row"
)

// Messages of conditions, by reason; the %-verbs are filled in the order given.
const (
	// MessageCreated: namespace, name.
	MessageCreated = "TFJob %s/%s is created"
	// MessageRunning: namespace, name.
	MessageRunning = "TFJob %s/%s is running"
	// MessageRunningAgain ends Restarting.
	MessageRunningAgain = "every replica is running again"
	// MessageRestarting: namespace, name, the replicas restarting.
	MessageRestarting = "TFJob %s/%s is restarting %d replica(s)"
	// MessageSuspended and MessageResumed follow runPolicy.suspend.
	MessageSuspended = "TFJob suspended: its pods are deleted"
	MessageResumed   = "TFJob resumed"
	// MessageDeadlineExceeded: activeDeadlineSeconds.
	MessageDeadlineExceeded = "TFJob ran longer than activeDeadlineSeconds (%ds)"
	// MessageBackoffLimitExceeded: the restarts, backoffLimit; the last failure follows.
	MessageBackoffLimitExceeded = "replicas restarted %d times, more than backoffLimit %d"
	// MessageDisrupted: namespace, name, the pods disrupted.
	MessageDisrupted = "TFJob %s/%s is re-creating %d disrupted pod(s) (preempted, evicted, drained or deleted before binding); disruptions do not count against backoffLimit"
)

// Pod creation refused: a condition beside the job's states, never its State. It is
// True while the API server refuses the job's pods (a ResourceQuota, Pod Security
// admission, a LimitRange, an invalid template), and False once pods get through again.
const (
	JobPodCreationRefused JobState = "PodCreationRefused"
	// ReasonPodCreationFailed: the API server refused a pod of the job; the message is
	// the API server's. tfk8s tries again after a delay that doubles, 1s up to 1m.
	ReasonPodCreationFailed = "PodCreationFailed"
	// ReasonPodsCreated: the job's pods are created again after a refusal.
	ReasonPodsCreated = "PodsCreated"
	// ReasonServiceNameTaken: a Service of the job's name exists and belongs to
	// something else; the job's pods cannot have their DNS names, and the job fails.
	ReasonServiceNameTaken = "ServiceNameTaken"
)

// A job's fields that the controller's configuration leaves without effect.
const (
	// JobFieldsIgnored is true while the job sets a field that does nothing under the
	// controller's configuration: a gang scheduling field when the job names no
	// provider and the controller's --gang-scheduler has no use for it. Admission
	// cannot refuse it: only the controller knows its default.
	JobFieldsIgnored JobState = "FieldsIgnored"
	// ReasonFieldsIgnored: the FieldsIgnored condition and its Warning event, whose
	// message names each field by its path.
	ReasonFieldsIgnored = "FieldsIgnored"
)

// The end record of a job that stores in S3: a condition beside the job's states,
// never its State. Once the job has finished, a short pod (<job>-record) writes the
// run's end.json with the job's own S3 credentials; the job's TTL deletion waits for it.
const (
	// JobEndRecorded is True once the end is recorded, False once tfk8s gave up.
	JobEndRecorded JobState = "EndRecorded"
	// ReasonEndRecorded: the record pod wrote end.json.
	ReasonEndRecorded = "EndRecorded"
	// ReasonEndNotRecorded: the record pod failed its tries or did not run in time;
	// the Warning event of that reason says why. The run then shows state Unknown.
	ReasonEndNotRecorded = "EndNotRecorded"
)

// Replicas that wait on the user: a condition beside the job's states, never its
// State, and never a failure: once the user fixes the image or the Secret, the kubelet's
// next try starts the container and the job goes on.
const (
	// JobReplicasWaiting is True while a container of a replica's pod waits for what
	// only the user can fix (an image that cannot be pulled, a Secret or ConfigMap key
	// that does not exist); its message names the replicas as ranges ("worker 0-999 and
	// ps 0 cannot pull image x:1"), and replicaStatuses list them in
	// imageNotPulledIndexes and containerConfigInvalidIndexes. False once none does, or
	// once the job finished or was suspended.
	JobReplicasWaiting JobState = "ReplicasWaiting"
	// ReasonImageNotPulled: the kubelet cannot pull a container's image (ErrImagePull,
	// ImagePullBackOff, InvalidImageName, ErrImageNeverPull, ImageInspectError).
	ReasonImageNotPulled = "ImageNotPulled"
	// ReasonContainerConfigInvalid: the kubelet cannot build a container's config
	// (CreateContainerConfigError): most often a Secret, ConfigMap or key it names is
	// missing.
	ReasonContainerConfigInvalid = "ContainerConfigInvalid"
	// ReasonWaitsCleared: no replica waits on the user any more.
	ReasonWaitsCleared = "WaitsCleared"
	// ReasonWaitsEnded: the job finished or was suspended while replicas waited; the
	// user fixed nothing, so no WaitsCleared event is emitted.
	ReasonWaitsEnded = "WaitsEnded"
)
