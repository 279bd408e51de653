package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrainingProgress is how far the job's training has got, as its lead replica (chief
// 0, else master 0, else worker 0) last reported it: shaped as Kubeflow Trainer's
// TrainJob progress (KEP-2779), with the step and the rate tfk8s also knows. The
// controller reads it from the lead replica's agent at most every 30 seconds while
// the job runs; it is not read once the job has ended, so it may then be up to one
// poll interval stale, short of the last steps. The program writes what it says,
// so no field is a guarantee.
type TrainingProgress struct {
	// Step is the highest step of any scalar the program wrote to its TensorBoard
	// event files.
	// +kubebuilder:validation:Minimum=0
	Step int64 `json:"step"`

	// TotalSteps is the step at which training ends, when the program said it: a
	// tfk8s/total_steps scalar, else the TFK8S_TOTAL_STEPS environment variable of
	// the lead replica. Absent when unknown.
	// +kubebuilder:validation:Minimum=1
	// +optional
	TotalSteps *int64 `json:"totalSteps,omitempty"`

	// ProgressPercentage is Step out of TotalSteps, rounded down, from 0 to 100.
	// Absent when the total is unknown.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ProgressPercentage *int32 `json:"progressPercentage,omitempty"`

	// EstimatedRemainingSeconds is the steps left divided by the recent step rate,
	// as of LastUpdatedTime. Absent when the total or the rate is unknown, and once
	// the job has finished.
	// +kubebuilder:validation:Minimum=0
	// +optional
	EstimatedRemainingSeconds *int32 `json:"estimatedRemainingSeconds,omitempty"`

	// StepsPerSecond is the recent step rate by the trainer's clock, a decimal
	// number without an exponent to four significant digits ("12.5", "0.0025"),
	// from 0.000000001 to 1000000000. Absent when fewer than two steps were seen, or
	// the rate is under that, and once the job has finished.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	StepsPerSecond string `json:"stepsPerSecond,omitempty"`

	// Metrics are the last values of a few scalars, the training loss first, by
	// "<run>/<tag>" as in progress.json ("train/epoch_loss").
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	Metrics []ProgressMetric `json:"metrics,omitempty"`

	// LastUpdatedTime is when the controller read a change of what this block says.
	LastUpdatedTime metav1.Time `json:"lastUpdatedTime"`
}

// ProgressMetric is the last value of one scalar.
type ProgressMetric struct {
	// Name is the scalar's "<run>/<tag>".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// Value is the scalar's value with six significant digits, or NaN, +Inf, -Inf.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	Value string `json:"value"`
}
