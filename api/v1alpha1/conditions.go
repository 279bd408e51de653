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
)

// ControllerName is the value of runPolicy.managedBy that means tfk8s.
const ControllerName = "tfk8s.io/tfjob-controller"

// Labels tfk8s puts on every pod of a job.
const (
	LabelJobName      = "tfk8s.io/job-name"
	LabelReplicaType  = "tfk8s.io/replica-type"
	LabelReplicaIndex = "tfk8s.io/replica-index"
)
