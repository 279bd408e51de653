package tfjob

import (
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

// The records of a run that the front ends, the controller and the agent agree on;
// where they are stored is storage's layout.

// RunRecord is a run's run.json: the job as it was created, without its status and
// the fields the API server manages, so that it can be submitted again.
type RunRecord struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	UID       string            `json:"uid"`
	Run       string            `json:"run"`
	Labels    map[string]string `json:"labels,omitempty"`
	Submitted time.Time         `json:"submitted"`
	Job       *tfv1.TFJob       `json:"job"`
}

// RunEnd is a run's end.json: how the job ended. The controller passes it to the
// agent that writes it, in EnvRunEnd.
type RunEnd struct {
	Completed time.Time `json:"completed"`
	// State is the job's final state: Succeeded, Failed, or Deleted for a job deleted
	// before it finished.
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Replicas are the replica statuses by type, as the job's status had them.
	Replicas map[string]tfv1.ReplicaStatus `json:"replicas,omitempty"`
	// Lead is the progress record of the run's lead replica as it stood when the end
	// was written, without its series: what tfk8s runs shows of a finished run, read
	// with its end. Nil when no lead replica stored one, or the end predates it.
	Lead *LeadProgress `json:"lead,omitempty"`
}

// leadTypes are the replica types whose first replica leads a job, in order: the one
// that drives training (which Keras' callback writes from), else the first worker.
var leadTypes = []tfv1.ReplicaType{tfv1.ReplicaTypeChief, tfv1.ReplicaTypeMaster, tfv1.ReplicaTypeWorker}

// LeadReplicas are the replicas whose summaries stand for a job's, in order: the first
// of each of leadTypes.
var LeadReplicas = func() []string {
	names := make([]string, len(leadTypes))
	for i, rt := range leadTypes {
		names[i] = ReplicaName(rt, 0)
	}
	return names
}()

// LeadProgress is a replica's progress record without its series.
type LeadProgress struct {
	Replica string `json:"replica"`
	tfevents.Progress
}

// NewLeadProgress is replica's progress record p without its series.
func NewLeadProgress(replica string, p *tfevents.Progress) *LeadProgress {
	l := &LeadProgress{Replica: replica, Progress: *p}
	l.Series = nil
	return l
}

// States of a run's end besides the job's own Succeeded and Failed.
const (
	// RunDeleted is the end of a job deleted before it finished.
	RunDeleted = "Deleted"
)

// The record pod: a short pod the controller starts once a job that stores in S3 has
// finished, to write its end record with the job's own S3 credentials.
const (
	// LabelRecord is on a job's record pod, naming the job.
	LabelRecord = "tfk8s.io/record"
	// EnvRunEnd is the RunEnd the record pod's agent writes, as JSON.
	EnvRunEnd = "TFK8S_RUN_END"
)

// RecordPodName names a job's record pod: <job>-record.
func RecordPodName(job string) string { return job + "-record" }

// EndOf is the end record of a finished job's status: its state, the reason and message
// of that state's condition, its completion time and replica counts.
func EndOf(st *tfv1.TFJobStatus) RunEnd {
	end := RunEnd{State: string(st.State), Replicas: map[string]tfv1.ReplicaStatus{}}
	if st.CompletionTime != nil {
		end.Completed = st.CompletionTime.UTC()
	}
	for _, c := range st.Conditions {
		if c.Type == end.State {
			end.Reason, end.Message = c.Reason, c.Message
		}
	}
	for rt, rs := range st.ReplicaStatuses {
		if rs != nil {
			end.Replicas[string(rt)] = *rs
		}
	}
	return end
}
