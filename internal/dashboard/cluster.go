package dashboard

import (
	"context"
	"io"
	"time"

	"k8s.io/client-go/rest"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
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
	// Logs writes the logs of a job's replicas (or of one) to w, each line prefixed
	// "[replica] ", as tfk8s logs prints them: following them until the job ends, or
	// the previous attempt of each replica.
	Logs(ctx context.Context, req LogRequest, w io.Writer) error
	// Suspend sets or clears spec.runPolicy.suspend.
	Suspend(ctx context.Context, namespace, name string, suspend bool) error
	// Delete deletes a job; its pods go with it.
	Delete(ctx context.Context, namespace, name string) error
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
	State           string
	// Ready counts the job's pods that are ready or succeeded; Desired its replicas.
	Ready, Desired int32
	Created        time.Time
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
	// TFConfig is the TF_CONFIG of the first replica, as tfk8s describe shows it.
	TFConfig string
	// YAML is the job as tfk8s get -o yaml prints it.
	YAML string
}

// ReplicaRow is one pod of a job.
type ReplicaRow struct {
	Replica, Pod, Phase, Node string
	Restarts                  int32
	// ExitCode is the last exit code and reason of the main container, "-" if none.
	ExitCode string
	Created  time.Time
}

// EventRow is one event about a job.
type EventRow struct {
	Time                        time.Time
	Type, Reason, From, Message string
}
