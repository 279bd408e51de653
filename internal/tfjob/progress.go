package tfjob

import (
	"unicode"
	"unicode/utf8"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// The live progress of a job: the lead replica's agent serves what it last read of
// the program's event files, and the controller polls it into the job's status.
const (
	// EnvProgressPort is the port of the pod's IP on which the agent serves its
	// progress; unset, it serves none. The controller sets it in the lead replicas of
	// jobs not on the host's network, where a fixed port could be taken.
	EnvProgressPort = "TFK8S_PROGRESS_PORT"
	// EnvTotalSteps is the step at which training ends, set by the user in the
	// container's environment when the program writes no tfk8s/total_steps scalar.
	EnvTotalSteps = "TFK8S_TOTAL_STEPS"
	// ProgressPort is the port the controller sets: beside TensorFlow's 2222 and
	// TensorBoard's 6006, free in TensorFlow's own images.
	ProgressPort = 2230
	// ProgressPath is the path of the agent's progress, served to GET.
	ProgressPath = "/progress"
	// MaxLiveProgressBytes bounds the body the controller reads.
	MaxLiveProgressBytes = 16 << 10
	// MaxLiveMetrics is how many scalars the agent serves, the loss first.
	MaxLiveMetrics = 8
	// MaxMetricNameBytes bounds a metric's name, as the status takes it.
	MaxMetricNameBytes = 128
)

// MetricNameFits reports whether a metric's name fits the status: 1 to
// MaxMetricNameBytes bytes of UTF-8 without control characters. The agent serves only
// such names and the controller keeps only them.
func MetricNameFits(s string) bool {
	if s == "" || len(s) > MaxMetricNameBytes || !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return false
		}
	}
	return true
}

// LiveProgress is the body of the agent's ProgressPath: the lead replica's progress
// without the series, a few hundred bytes.
type LiveProgress struct {
	Step           int64        `json:"step"`
	TotalSteps     int64        `json:"totalSteps,omitempty"`
	StepsPerSecond float64      `json:"stepsPerSecond,omitempty"`
	Metrics        []LiveMetric `json:"metrics,omitempty"`
}

// LiveMetric is a scalar's last value, as tfevents.Value.Display renders it.
type LiveMetric struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// LeadReplica is the replica type of job whose progress stands for the job's: the
// first of leadTypes (those of LeadReplicas) that the job has; false when it has none.
func LeadReplica(job *tfv1.TFJob) (tfv1.ReplicaType, bool) {
	for _, rt := range leadTypes {
		if spec := job.Spec.TFReplicaSpecs[rt]; spec != nil && Replicas(spec) > 0 {
			return rt, true
		}
	}
	return "", false
}

// ServesProgress reports whether the controller asks replica (rt, index) of job to
// serve its progress: the lead replica, when its agent uploads artifacts (whose event
// files it reads) and the pod has an IP of its own: neither the job's networking nor
// the replica's template puts it on the host's network.
func ServesProgress(job *tfv1.TFJob, rt tfv1.ReplicaType, index int32) bool {
	lead, ok := LeadReplica(job)
	a := job.Spec.Artifacts
	return ok && rt == lead && index == 0 && a != nil && a.Destination != "" && len(a.Paths) > 0 &&
		job.Spec.Networking.Mode != tfv1.NetworkingModeHostNetwork && !job.Spec.TFReplicaSpecs[rt].Template.Spec.HostNetwork
}
