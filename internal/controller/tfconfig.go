package controller

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
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
func taskType(rt tfv1.ReplicaType) string { return strings.ToLower(string(rt)) }

// GenTFConfig returns the TF_CONFIG of one replica of job, or "" when the job has a single
// replica in all: a single-node job runs TensorFlow locally, without a cluster.
//
// The evaluator is not part of the cluster: TensorFlow's examples leave it out (its task
// type alone says what it is), and other tasks waiting for it would wait forever.
func GenTFConfig(job *tfv1.TFJob, rt tfv1.ReplicaType, index int32, opts AddressOptions) (string, error) {
	if totalReplicas(job) <= 1 {
		return "", nil
	}
	cluster := map[string]any{}
	for _, t := range tfv1.ReplicaTypes {
		spec := job.Spec.TFReplicaSpecs[t]
		if spec == nil || t == tfv1.ReplicaTypeEvaluator || replicas(spec) == 0 {
			continue
		}
		if job.Spec.EnableDynamicWorker && rt == tfv1.ReplicaTypeWorker && t == tfv1.ReplicaTypeWorker {
			cluster[taskType(t)] = map[string]string{strconv.Itoa(int(index)): replicaAddress(job, t, index, opts)}
			continue
		}
		addrs := make([]string, replicas(spec))
		for i := range addrs {
			addrs[i] = replicaAddress(job, t, int32(i), opts)
		}
		cluster[taskType(t)] = addrs
	}
	data, err := json.Marshal(TFConfig{
		Cluster:     cluster,
		Task:        TFTask{Type: taskType(rt), Index: index},
		Environment: "cloud",
	})
	if err != nil {
		return "", fmt.Errorf("encoding TF_CONFIG: %w", err)
	}
	return string(data), nil
}

// replicaAddress is host:port of a replica: its stable DNS name under the job's headless
// Service, and the replica's port.
func replicaAddress(job *tfv1.TFJob, rt tfv1.ReplicaType, index int32, opts AddressOptions) string {
	host := fmt.Sprintf("%s.%s.%s.svc", PodName(job.Name, rt, index), job.Name, job.Namespace)
	if opts.ClusterDomain != "" {
		host += "." + opts.ClusterDomain
	}
	port := replicaPort(job, rt)
	if p, ok := opts.HostPorts[ReplicaKey{rt, index}]; ok {
		port = p
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// replicaPort is the container port named tfjob-port of the replica type's TensorFlow
// container, else DefaultPort.
func replicaPort(job *tfv1.TFJob, rt tfv1.ReplicaType) int32 {
	spec := job.Spec.TFReplicaSpecs[rt]
	if spec == nil {
		return DefaultPort
	}
	c := TensorFlowContainer(spec.Template.Spec.Containers)
	if c == nil {
		return DefaultPort
	}
	for _, p := range c.Ports {
		if p.Name == PortName {
			return p.ContainerPort
		}
	}
	return DefaultPort
}

// PodName is the name of a replica's pod: <job>-<type>-<index>, type in lower case.
func PodName(job string, rt tfv1.ReplicaType, index int32) string {
	return fmt.Sprintf("%s-%s-%d", job, strings.ToLower(string(rt)), index)
}

// replicas is the number of replicas a spec asks for (1 when unset, as defaulted).
func replicas(spec *tfv1.ReplicaSpec) int32 {
	if spec == nil {
		return 0
	}
	if spec.Replicas == nil {
		return 1
	}
	return *spec.Replicas
}

// totalReplicas is the number of replicas of the job, all types together.
func totalReplicas(job *tfv1.TFJob) int32 {
	var n int32
	for _, spec := range job.Spec.TFReplicaSpecs {
		n += replicas(spec)
	}
	return n
}
