package v1alpha1

// ControllerName is the value of runPolicy.managedBy that means tfk8s.
const ControllerName = "tfk8s.io/tfjob-controller"

// Labels tfk8s puts on every pod of a job.
const (
	LabelJobName      = "tfk8s.io/job-name"
	LabelReplicaType  = "tfk8s.io/replica-type"
	LabelReplicaIndex = "tfk8s.io/replica-index"
)

// LabelVolume is on the claims tfk8s creates for spec.volumes, beside LabelJobName; its
// value is the volume's name.
const LabelVolume = "tfk8s.io/volume"

// TrackingFinalizer keeps a pod until its outcome is recorded in the job's status, so
// a finished replica is counted even when its pod is deleted before tfk8s sees it.
const TrackingFinalizer = "tfk8s.io/tracking"

// The workspace beside the jobs: a TensorBoard per job, notebooks per namespace. The
// CLI and the dashboard find them by these labels.
const (
	// LabelTensorBoard is on a job's TensorBoard Deployment, Service and pod; its value
	// is the job's name.
	LabelTensorBoard = "tfk8s.io/tensorboard"
	// AnnotationTensorBoardRequested, an RFC 3339 time on a job, asks the controller to
	// keep (or bring back) the job's TensorBoard until its time to live has passed since
	// then, even when the job finished long before: `tfk8s tensorboard` sets it.
	AnnotationTensorBoardRequested = "tfk8s.io/tensorboard-requested-at"
	// AnnotationCreator names the user who created the job, as the API server knows
	// them: tfk8s submit and the dashboard set it, the notebooks' admission policy
	// requires it of a notebook's account, and no update may change it. A notebook may
	// change where another user's job sends its data only if the job is its own.
	AnnotationCreator = "tfk8s.io/creator"
	// LabelNotebook is on a notebook's objects (Deployment, Service, claim, account);
	// its value is the notebook's name.
	LabelNotebook = "tfk8s.io/notebook"
	// LabelSharedClaim, "true" on a claim, lets every notebook's jobs mount it: a
	// namespace admin, who may write claims, sets it.
	LabelSharedClaim = "tfk8s.io/shared-claim"
)

// Kueue's labels on a TFJob and its Workload, as Kueue spells them: tfk8s speaks Kueue's
// job-framework contract without importing Kueue's API module.
const (
	// LabelKueueQueue names the LocalQueue a job waits in (runPolicy.schedulingPolicy.queue
	// is Volcano's queue, not Kueue's).
	LabelKueueQueue = "kueue.x-k8s.io/queue-name"
	// LabelKueuePriorityClass names the WorkloadPriorityClass of a job.
	LabelKueuePriorityClass = "kueue.x-k8s.io/priority-class"
	// LabelKueueJobUID is on a job's Workload; Kueue names the job by it in its messages.
	LabelKueueJobUID = "kueue.x-k8s.io/job-uid"
)
