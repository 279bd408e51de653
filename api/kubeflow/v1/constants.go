package kubeflowv1

// The labels training-operator v1.9 puts on every pod and Service of a job. Kubeflow's
// Python SDK finds a job's pods by them (get_job_logs), so tfk8s sets them too, beside
// its own tfk8s.io labels.
const (
	// LabelJobName is the job's name.
	LabelJobName = "training.kubeflow.org/job-name"
	// LabelReplicaType is the replica type in lower case: chief, master, ps, worker, evaluator.
	LabelReplicaType = "training.kubeflow.org/replica-type"
	// LabelReplicaIndex is the replica's index, "0", "1", ...
	LabelReplicaIndex = "training.kubeflow.org/replica-index"
	// LabelOperatorName names the operator; v1.9's value for a TFJob is OperatorName.
	LabelOperatorName = "training.kubeflow.org/operator-name"
	// LabelJobRole is JobRoleMaster on the chief or master, else on worker 0.
	LabelJobRole = "training.kubeflow.org/job-role"
)

// AnnotationTrainingOperatorServices, "true" on a kubeflow.org job, gives it
// training-operator's Services and host names: a Service per replica,
// <job>-<type>-<index>, and TF_CONFIG naming <job>-<type>-<index>.<namespace>.svc, for a
// program that dials those names itself. tfk8s sets it on a job whose pods it adopted
// from training-operator, so that a pod it re-creates names its peers as they do.
const AnnotationTrainingOperatorServices = "tfk8s.io/training-operator-services"

// AnnotationAdopted, "true" on a kubeflow.org job, says tfk8s adopted its pods from
// training-operator. A pod tfk8s re-creates for such a job joins no gang group: the
// adopted pods never joined one, so a group would wait for a quorum it cannot reach.
const AnnotationAdopted = "tfk8s.io/adopted-from-training-operator"

const (
	// OperatorName is the value of LabelOperatorName, as v1.9 sets it for a TFJob.
	OperatorName = "tfjob-controller"
	// JobRoleMaster is the value of LabelJobRole.
	JobRoleMaster = "master"
)

// The values of runPolicy.managedBy that v1.9 admits.
const (
	// ManagedByTrainingOperator is v1.9's own value, which tfk8s takes as its own: a
	// cluster moving from training-operator to tfk8s keeps its jobs.
	ManagedByTrainingOperator = "kubeflow.org/training-operator"
	// ManagedByMultiKueue hands the job to Kueue's MultiKueue, which runs it on a worker
	// cluster and mirrors its status back; tfk8s leaves such a job alone.
	ManagedByMultiKueue = "kueue.x-k8s.io/multikueue"
)

const (
	// DefaultContainerName is the container that gets TF_CONFIG and the default port.
	DefaultContainerName = "tensorflow"
	// DefaultPortName is the name of the port replicas reach each other on.
	DefaultPortName = "tfjob-port"
	// DefaultPort is the port added when the container has none named DefaultPortName.
	DefaultPort = 2222
)
