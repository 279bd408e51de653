package controller

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TFConfig is the TF_CONFIG environment variable TensorFlow's TFConfigClusterResolver
// reads: the addresses of every task in the cluster, and which task this process is.
type TFConfig struct {
	// Cluster maps a task type ("chief", "master", "ps", "worker") to its addresses,
	// index by index; with a sparse cluster, "worker" maps indexes to addresses.
	Cluster map[string]any `json:"cluster"`
	Task    TFTask         `json:"task"`
	// Environment is "cloud", as TensorFlow expects outside Google.
	Environment string `json:"environment"`
}

// TFTask names one task of the cluster.
type TFTask struct {
	Type  string `json:"type"`
	Index int32  `json:"index"`
}

// AddressOptions say how replicas are addressed.
type AddressOptions struct {
	// ClusterDomain, when set, makes addresses fully qualified:
	// <pod>.<job>.<namespace>.svc.<ClusterDomain>.
	ClusterDomain string
	// HostPorts are the ports of a HostNetwork job, by replica; nil in DNS mode.
	HostPorts map[ReplicaKey]int32
}

// ReplicaKey names one replica of a job.
type ReplicaKey struct {
	Type  tfv1.ReplicaType
	Index int32
}

// taskType is the TF_CONFIG task type of a replica type: its name in lower case, which is
// what TensorFlow expects ("master" is the legacy chief of TensorFlow's Estimator).

// GenTFConfig returns the TF_CONFIG of one replica of job, or "" when the job has a single
// replica in all: a single-node job runs TensorFlow locally, without a cluster.
//
// The evaluator is not part of the cluster: TensorFlow's examples leave it out (its task
// type alone says what it is), and other tasks waiting for it would wait forever.
func GenTFConfig(job *tfv1.TFJob, rt tfv1.ReplicaType, index int32, opts AddressOptions) (string, error) {
	return NewTFConfigs(job, opts).For(rt, index)
}

// TFConfigs builds the TF_CONFIG of every replica of one job. The cluster, the same for
// all replicas and as long as the job is large, is encoded once: a 1000-worker job's
// pods together carry 47 MB of it (47 KB each).
type TFConfigs struct {
	job  *tfv1.TFJob
	opts AddressOptions
	// cluster is the encoded cluster, or "" for a single-replica job.
	cluster string
	err     error
}

// NewTFConfigs prepares the TF_CONFIGs of job's replicas.
func NewTFConfigs(job *tfv1.TFJob, opts AddressOptions) *TFConfigs {
	t := &TFConfigs{job: job, opts: opts}
	if totalReplicas(job) > 1 {
		t.cluster, t.err = t.encodeCluster(nil)
	}
	return t
}

// For returns the TF_CONFIG of one replica, as GenTFConfig does.
func (t *TFConfigs) For(rt tfv1.ReplicaType, index int32) (string, error) {
	if t.err != nil || t.cluster == "" {
		return "", t.err
	}
	cluster := t.cluster
	if t.job.Spec.EnableDynamicWorker && rt == tfv1.ReplicaTypeWorker {
		// A dynamic worker knows only itself among the workers.
		var err error
		if cluster, err = t.encodeCluster(&ReplicaKey{rt, index}); err != nil {
			return "", err
		}
	}
	task, err := json.Marshal(TFTask{Type: tfjob.TaskType(rt), Index: index})
	if err != nil {
		return "", fmt.Errorf("encoding TF_CONFIG: %w", err)
	}
	// The bytes json.Marshal(TFConfig{...}) gives, without encoding the cluster again.
	var b strings.Builder
	b.Grow(len(cluster) + len(task) + 64)
	b.WriteString(`{"cluster":`)
	b.WriteString(cluster)
	b.WriteString(`,"task":`)
	b.Write(task)
	b.WriteString(`,"environment":"cloud"}`)
	return b.String(), nil
}

// encodeCluster encodes the cluster; with self, a dynamic worker's view of it, where
// "worker" holds self alone, keyed by its index.
func (t *TFConfigs) encodeCluster(self *ReplicaKey) (string, error) {
	cluster := map[string]any{}
	for _, rt := range tfv1.ReplicaTypes {
		spec := t.job.Spec.TFReplicaSpecs[rt]
		if spec == nil || rt == tfv1.ReplicaTypeEvaluator || tfjob.Replicas(spec) == 0 {
			continue
		}
		if self != nil && rt == self.Type {
			cluster[tfjob.TaskType(rt)] = map[string]string{strconv.Itoa(int(self.Index)): replicaAddress(t.job, rt, self.Index, t.opts)}
			continue
		}
		addrs := make([]string, tfjob.Replicas(spec))
		for i := range addrs {
			addrs[i] = replicaAddress(t.job, rt, int32(i), t.opts)
		}
		cluster[tfjob.TaskType(rt)] = addrs
	}
	data, err := json.Marshal(cluster)
	if err != nil {
		return "", fmt.Errorf("encoding TF_CONFIG: %w", err)
	}
	return string(data), nil
}

// replicaAddress is host:port of a replica: its stable DNS name under the job's headless
// Service, and the replica's port.
func replicaAddress(job *tfv1.TFJob, rt tfv1.ReplicaType, index int32, opts AddressOptions) string {
	port := replicaPort(job, rt)
	if p, ok := opts.HostPorts[ReplicaKey{rt, index}]; ok {
		port = p
	}
	addr := tfjob.PodName(job.Name, rt, index) + "." + job.Name + "." + job.Namespace + ".svc"
	if opts.ClusterDomain != "" {
		addr += "." + opts.ClusterDomain
	}
	return addr + ":" + strconv.Itoa(int(port))
}

// replicaPort is the container port named tfjob-port of the replica type's TensorFlow
// container, else tfjob.DefaultPort.
func replicaPort(job *tfv1.TFJob, rt tfv1.ReplicaType) int32 {
	spec := job.Spec.TFReplicaSpecs[rt]
	if spec == nil {
		return tfjob.DefaultPort
	}
	c := tfjob.TensorFlowContainer(spec.Template.Spec.Containers)
	if c == nil {
		return tfjob.DefaultPort
	}
	for _, p := range c.Ports {
		if p.Name == tfjob.PortName {
			return p.ContainerPort
		}
	}
	return tfjob.DefaultPort
}

// totalReplicas is the number of replicas of the job, all types together.
func totalReplicas(job *tfv1.TFJob) int32 {
	var n int32
	for _, spec := range job.Spec.TFReplicaSpecs {
		n += tfjob.Replicas(spec)
	}
	return n
}
