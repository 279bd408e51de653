package controller

import (
	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// The builders' options and defaults (package build), under the names the
// controller's flags, its install and the tests outside this package use.
type (
	PodOptions     = build.PodOptions
	AgentOptions   = build.AgentOptions
	AddressOptions = build.AddressOptions
	GangOptions    = build.GangOptions
	ReplicaKey     = build.ReplicaKey
	TFConfigs      = build.TFConfigs
	PortRange      = build.PortRange
)

// Defaults of the controller's flags.
const (
	DefaultCompactTFConfigAbove      = build.DefaultCompactTFConfigAbove
	DefaultSchedulerPluginsScheduler = build.DefaultSchedulerPluginsScheduler
)

// Defaults of the controller's flags.
var (
	DefaultAgentImage        = build.DefaultAgentImage
	DefaultTensorBoardImage  = build.DefaultTensorBoardImage
	DefaultAgentDirSizeLimit = build.DefaultAgentDirSizeLimit
	DefaultFetchSizeLimit    = build.DefaultFetchSizeLimit
	DefaultHostPortRange     = build.DefaultHostPortRange
)

// ConstructPod builds the pod of one replica (build.Pod).
func ConstructPod(job *tfv1.TFJob, rt tfv1.ReplicaType, index int32, opts PodOptions) (*corev1.Pod, error) {
	return build.Pod(job, rt, index, opts, nil)
}

// NewTFConfigs prepares the TF_CONFIGs of job's replicas (build.NewTFConfigs).
func NewTFConfigs(job *tfv1.TFJob, opts AddressOptions, compactAbove int) *TFConfigs {
	return build.NewTFConfigs(job, opts, compactAbove)
}
