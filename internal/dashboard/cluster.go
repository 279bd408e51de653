package dashboard

import (
	"context"
	"io"
	"time"

	"k8s.io/client-go/rest"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/runs"
)

// Cluster is what the dashboard reads and changes in the cluster, always as one user:
// the kubeconfig's in local mode, the signed-in user's token in-cluster. The tfk8s
// command line implements it with the code of its own commands (list, describe, logs,
// suspend, resume, delete), so that the browser shows what the terminal shows.
type Cluster interface {
	// Namespaces lists the namespaces the user may list; an error (such as Forbidden)
	// leaves the namespace to be typed.
	Namespaces(ctx context.Context) ([]string, error)
	// Jobs lists the jobs of a namespace, sorted by name.
	Jobs(ctx context.Context, namespace string) ([]JobRow, error)
	// Job reads one job with its pods, events and the TF_CONFIG of its first replica.
	Job(ctx context.Context, namespace, name string) (*JobPage, error)
	// Progress reads the progress records a job's replicas stored in S3, with the
	// job's storage as the user may read it, as Artifacts does.
	Progress(ctx context.Context, namespace, name string) (*Progress, error)
	// Runs lists the runs of q.Namespace stored in S3 that q picks, as tfk8s runs
	// lists them, with the namespace's RunsSecret as the user may read it. Beside runs,
	// an error says which records could not be read.
	Runs(ctx context.Context, q runs.Query) ([]runs.Run, error)
	// Run reads one run as tfk8s runs show does, with its replicas' progress records.
	Run(ctx context.Context, namespace, job, run string) (*RunPage, error)
	// Logs writes the logs of a job's replicas (or of one) to w, each line prefixed
	// "[replica] ", as tfk8s logs prints them: following them until the job ends, or
	// the previous attempt of each replica.
	Logs(ctx context.Context, req LogRequest, w io.Writer) error
	// Suspend sets or clears spec.runPolicy.suspend.
	Suspend(ctx context.Context, namespace, name string, suspend bool) error
	// Delete deletes a job; its pods go with it.
	Delete(ctx context.Context, namespace, name string) error
	// Submit builds a job as tfk8s submit does, from submit's flags or over a
	// manifest, and has the API server validate it (a dry run) or create it.
	Submit(ctx context.Context, req SubmitRequest) (*Submitted, error)
	// Clone returns a past job as the flags and the manifest of a new one; the flags
	// are nil for a job they cannot say (its code, artifacts, volumes).
	Clone(ctx context.Context, namespace, name string) (*SubmitRequest, error)
	// Artifacts lists what a job's replicas stored in S3, as tfk8s artifacts ls.
	Artifacts(ctx context.Context, namespace, name string) ([]ArtifactRow, error)
	// Artifact writes one stored file of a job to w; path is relative to the job's
	// prefix, as Artifacts gives it.
	Artifact(ctx context.Context, namespace, name, path string, w io.Writer) error
	// Workspace lists the notebooks and TensorBoards of a namespace.
	Workspace(ctx context.Context, namespace string) (*Workspace, error)
	// StartNotebook starts a notebook as tfk8s notebook start does, with its objects
	// built by the same code; a notebook that runs already is left as it is.
	StartNotebook(ctx context.Context, req NotebookRequest) error
	// StopNotebook deletes a notebook's objects as tfk8s notebook stop does, its home
	// claim too when deleteHome.
	StopNotebook(ctx context.Context, namespace, name string, deleteHome bool) error
	// RequestTensorBoard does to a job what tfk8s tensorboard JOB does before it
	// forwards a port: it asks the controller to keep the job's TensorBoard, or to
	// create it again, for its time to live from now.
	RequestTensorBoard(ctx context.Context, namespace, name string) error
}

// NotebookRequest is a notebook to start: tfk8s notebook start's NAME and the flags
// the dashboard's form sets, as typed ("" for a flag's default).
type NotebookRequest struct {
	Namespace, Name    string
	Image, CPU, Memory string
}

// NewClusterFunc connects to the cluster with cfg, which carries the user's
// credentials, and with namespace as the default namespace.
type NewClusterFunc func(cfg *rest.Config, namespace string) (Cluster, error)

// LogRequest says which logs of a job to stream.
type LogRequest struct {
	Namespace, Job string
	// Replica is "worker-0" and the like; "" for every replica, merged.
	Replica string
	// Previous asks for the attempt before the current one of each replica.
	Previous bool
	// Follow keeps streaming until the job ends.
	Follow bool
}

// JobRow is a job's line in the jobs list.
type JobRow struct {
	Namespace, Name string
	// Group is "kubeflow.org" for a Kubeflow TFJob, "" for tfk8s.io's.
	Group string
	State string
	// Ready counts the job's pods that are ready or succeeded; Desired its replicas.
	Ready, Desired int32
	// GPUsAllocated counts the GPUs of the job's pods bound to a node and not finished
	// (tfjob.GPUsAllocated); GPUsRequested those its replicas ask for
	// (tfjob.GPUsRequested), the numbers tfk8s list shows too.
	GPUsAllocated, GPUsRequested int64
	Created                      time.Time
	// Duration is from the start to completion, or to now while running; 0 if not
	// started.
	Duration time.Duration
	Image    string
}

// JobPage is everything the job page shows.
type JobPage struct {
	Job      *tfv1.TFJob
	Replicas []ReplicaRow
	Events   []EventRow
	// GPUsAllocated and GPUsRequested count the job's GPUs as JobRow does.
	GPUsAllocated, GPUsRequested int64
	// TFConfig is the TF_CONFIG of the first replica, as tfk8s describe shows it.
	TFConfig string
	// YAML is the job as tfk8s get -o yaml prints it.
	YAML string
	// Kubeflow is true for a kubeflow.org TFJob, which has none of tfk8s.io's extras
	// (artifacts, TensorBoard).
	Kubeflow bool
}

// ReplicaRow is one pod of a job.
type ReplicaRow struct {
	Replica, Pod, Phase, Node string
	Restarts                  int32
	// GPUs is what the pod asks for (tfjob.PodGPUs).
	GPUs int64
	// ExitCode is the last exit code and reason of the main container, "-" if none.
	ExitCode string
	Created  time.Time
}

// EventRow is one event about a job.
type EventRow struct {
	Time                        time.Time
	Type, Reason, From, Message string
}

// SubmitRequest is a job to submit: tfk8s submit's flags (by name, without the
// dashes; the repeatable --env and --volume one value a line) and command, or a
// manifest the flags apply over, as with submit -f.
type SubmitRequest struct {
	Namespace string
	Flags     map[string]string
	// Command is the command of every replica, split at spaces.
	Command string
	// YAML is a TFJob manifest; "" for none.
	YAML string
	// DryRun has the API server validate the job and create nothing.
	DryRun bool
	// Unsaid, in a clone, names what of the job the form cannot say (its flags, or
	// the spec's paths), for which it has no fields.
	Unsaid []string
}

// Submitted is the job as the API server accepted (or, in a dry run, would create) it.
type Submitted struct {
	Namespace, Name string
	// YAML is the job as tfk8s get -o yaml prints it.
	YAML string
	// Warning says what went wrong after the job was created: its run record not
	// written, say.
	Warning string
}

// ArtifactRow is one file a job's replica stored.
type ArtifactRow struct {
	// Replica is the first part of Path, such as "worker-0".
	Replica string
	// Path is relative to the job's prefix: worker-0/artifacts/model.keras.
	Path     string
	Size     int64
	Modified time.Time
}

// Workspace is what a namespace holds besides jobs: notebooks and TensorBoards.
type Workspace struct {
	Notebooks []NotebookRow
	// NotebooksError says why notebooks could not be listed (RBAC, often), "" if
	// they were.
	NotebooksError string
	TensorBoards   []TensorBoardRow
	// NoNotebookS3 says that a notebook started here gets no S3 settings (the
	// in-cluster dashboard has none of its own to give).
	NoNotebookS3 bool
}

// NotebookRow is a notebook, as tfk8s notebook list shows it.
type NotebookRow struct {
	Name, State string
	// URL is where it answers inside the cluster, "" when stopped.
	URL     string
	Created time.Time
}

// TensorBoardRow is a job's TensorBoard.
type TensorBoardRow struct {
	Job, JobState string
	// URL is where it answers inside the cluster, "" when deleted.
	URL   string
	Ready bool
	// Deleted is true for a job that asked for a TensorBoard whose TensorBoard was
	// deleted after its time to live: re-opening it brings it back.
	Deleted bool
	// Expires is when tfk8s deletes it; zero while the job runs.
	Expires time.Time
}

// RunPage is everything a run's page shows.
type RunPage struct {
	*runs.Details
	// Progress are its replicas' progress records, in replica order, at most
	// maxCurveReplicas of them; More tells that there are others.
	Progress []*jobs.JobProgress
	More     bool
}
