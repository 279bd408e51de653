// Package tfconfig composes TensorFlow's TF_CONFIG: the addresses of every task of a
// job's cluster, and which task a process is. The controller and the agent both use it:
// the controller writes small jobs' TF_CONFIG into their pods, and for large jobs run
// under the agent writes only the Cluster (a few hundred bytes, whatever the job's
// size), from which the agent composes the same TF_CONFIG, byte for byte, in the pod.
// Writing the whole cluster into every pod costs O(n²) bytes per job: 47 MB of pods for
// 1000 workers, 4.7 GB for 10,000, past what etcd takes.
//
// It imports the API types and package tfjob and nothing heavier, so that the agent
// links little through it.
package tfconfig

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// EnvCluster is the environment variable holding a pod's Cluster, as JSON, in place of
// TF_CONFIG: the agent composes TF_CONFIG from it and the pod's replica.
const EnvCluster = "TFK8S_CLUSTER"

// Cluster is all TF_CONFIG is a function of, besides the task: the job's name and
// namespace, its replica counts and ports, and the cluster domain. Its size does not
// grow with the number of replicas (in HostNetwork mode, with the number of runs of
// consecutive host ports, which tfk8s allocates in one run).
type Cluster struct {
	Job       string `json:"job"`
	Namespace string `json:"namespace"`
	// Domain, when set, makes addresses fully qualified:
	// <pod>.<job>.<namespace>.svc.<Domain>.
	Domain string `json:"domain,omitempty"`
	// DynamicWorker: a worker's cluster lists itself alone among the workers.
	DynamicWorker bool `json:"dynamicWorker,omitempty"`
	// ServicePerReplica names each replica by a Service of its own, as training-operator
	// did: <pod>.<namespace>.svc, without the job's headless Service in between.
	ServicePerReplica bool `json:"servicePerReplica,omitempty"`
	// Replicas are the replica types of the job, in tfv1.ReplicaTypes order, those with
	// no replica left out.
	Replicas []Replicas `json:"replicas"`
}

// Replicas are the replicas of one type.
type Replicas struct {
	Type  tfv1.ReplicaType `json:"type"`
	Count int32            `json:"count"`
	// Port is the port every replica of the type listens on, in DNS mode.
	Port int32 `json:"port,omitempty"`
	// HostPorts, in HostNetwork mode, are the replicas' ports in index order, as runs of
	// consecutive ports.
	HostPorts []PortRun `json:"hostPorts,omitempty"`
}

// PortRun is Count consecutive ports from First, encoded as [first, count].
type PortRun struct{ First, Count int32 }

// MarshalJSON encodes a run as [first, count].
func (r PortRun) MarshalJSON() ([]byte, error) {
	return []byte("[" + strconv.Itoa(int(r.First)) + "," + strconv.Itoa(int(r.Count)) + "]"), nil
}

// UnmarshalJSON decodes [first, count].
func (r *PortRun) UnmarshalJSON(data []byte) error {
	var v [2]int32
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("decoding a host port run: %w", err)
	}
	r.First, r.Count = v[0], v[1]
	return nil
}

// PortRuns encodes ports, in index order, as runs of consecutive ports.
func PortRuns(ports []int32) []PortRun {
	var runs []PortRun
	for _, p := range ports {
		if n := len(runs); n > 0 && runs[n-1].First+runs[n-1].Count == p {
			runs[n-1].Count++
			continue
		}
		runs = append(runs, PortRun{First: p, Count: 1})
	}
	return runs
}

// port is the port of replica index.
func (r Replicas) port(index int32) (int32, error) {
	if len(r.HostPorts) == 0 {
		return r.Port, nil
	}
	i := index
	for _, run := range r.HostPorts {
		if i < run.Count {
			return run.First + i, nil
		}
		i -= run.Count
	}
	return 0, fmt.Errorf("no host port for %s", tfjob.ReplicaName(r.Type, index))
}

// Total is the number of replicas of the job, all types together.
func (c *Cluster) Total() int32 {
	var n int32
	for _, r := range c.Replicas {
		n += r.Count
	}
	return n
}

// Encode is the cluster as the JSON the pods carry in EnvCluster.
func (c *Cluster) Encode() (string, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encoding the cluster: %w", err)
	}
	return string(data), nil
}

// Decode reads a cluster encoded by Encode.
func Decode(s string) (*Cluster, error) {
	c := &Cluster{}
	if err := json.Unmarshal([]byte(s), c); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", EnvCluster, err)
	}
	for _, r := range c.Replicas {
		if !slices.Contains(tfv1.ReplicaTypes, r.Type) || r.Count < 0 || r.Count > maxReplicas {
			return nil, fmt.Errorf("decoding %s: replica type %q with %d replicas", EnvCluster, r.Type, r.Count)
		}
	}
	return c, nil
}

// maxReplicas is the most replicas of one type a TFJob may have (the CRD's maximum):
// a cluster claiming more is refused before TF_CONFIG lists them all.
const maxReplicas = 100000

// has reports whether the cluster holds replica index of type rt.
func (c *Cluster) has(rt tfv1.ReplicaType, index int32) bool {
	i := slices.IndexFunc(c.Replicas, func(r Replicas) bool { return r.Type == rt })
	return i >= 0 && index < c.Replicas[i].Count
}

// address is host:port of a replica: its stable DNS name under the job's headless
// Service (or its own Service, with ServicePerReplica), and its port.
func (c *Cluster) address(r Replicas, index int32) (string, error) {
	port, err := r.port(index)
	if err != nil {
		return "", err
	}
	addr := tfjob.PodName(c.Job, r.Type, index) + "." + c.Job + "." + c.Namespace + ".svc"
	if c.ServicePerReplica {
		addr = tfjob.PodName(c.Job, r.Type, index) + "." + c.Namespace + ".svc"
	}
	if c.Domain != "" {
		addr += "." + c.Domain
	}
	return addr + ":" + strconv.Itoa(int(port)), nil
}

// EncodeTasks encodes the "cluster" of TF_CONFIG: the addresses by task type; with self,
// a dynamic worker's view of it, where its type holds self alone, keyed by its index.
// The evaluator is not part of the cluster: TensorFlow's examples leave it out (its
// task type alone says what it is), and other tasks waiting for it would wait forever.
func (c *Cluster) EncodeTasks(self *tfv1.ReplicaType, selfIndex int32) (string, error) {
	cluster := map[string]any{}
	for _, r := range c.Replicas {
		if r.Type == tfv1.ReplicaTypeEvaluator || r.Count <= 0 {
			continue
		}
		if self != nil && r.Type == *self {
			addr, err := c.address(r, selfIndex)
			if err != nil {
				return "", err
			}
			cluster[tfjob.TaskType(r.Type)] = map[string]string{strconv.Itoa(int(selfIndex)): addr}
			continue
		}
		addrs := make([]string, r.Count)
		for i := range addrs {
			var err error
			if addrs[i], err = c.address(r, int32(i)); err != nil {
				return "", err
			}
		}
		cluster[tfjob.TaskType(r.Type)] = addrs
	}
	data, err := json.Marshal(cluster)
	if err != nil {
		return "", fmt.Errorf("encoding TF_CONFIG: %w", err)
	}
	return string(data), nil
}

// Splice is TF_CONFIG from an encoded cluster and a task: the bytes
// json.Marshal({cluster, task, environment: "cloud"}) gives, without encoding the
// cluster again for every replica.
func Splice(cluster string, rt tfv1.ReplicaType, index int32) string {
	task, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Index int32  `json:"index"`
	}{tfjob.TaskType(rt), index}) // a string and an integer always encode
	var b strings.Builder
	b.Grow(len(cluster) + len(task) + 64)
	b.WriteString(`{"cluster":`)
	b.WriteString(cluster)
	b.WriteString(`,"task":`)
	b.Write(task)
	b.WriteString(`,"environment":"cloud"}`)
	return b.String()
}

// For is the TF_CONFIG of one replica, or "" when the job has a single replica in all:
// a single-node job runs TensorFlow locally, without a cluster.
func (c *Cluster) For(rt tfv1.ReplicaType, index int32) (string, error) {
	if c.Total() <= 1 {
		return "", nil
	}
	var self *tfv1.ReplicaType
	if c.DynamicWorker && rt == tfv1.ReplicaTypeWorker {
		self = &rt // a dynamic worker knows only itself among the workers
	}
	cluster, err := c.EncodeTasks(self, index)
	if err != nil {
		return "", err
	}
	return Splice(cluster, rt, index), nil
}

// ParseReplica reads a replica name as tfjob.ReplicaName writes it (worker-1).
func ParseReplica(name string) (tfv1.ReplicaType, int32, error) {
	typ, idx, ok := strings.Cut(name, "-")
	index, err := strconv.ParseInt(idx, 10, 32)
	if ok && err == nil && index >= 0 {
		for _, rt := range tfv1.ReplicaTypes {
			if tfjob.TaskType(rt) == typ {
				return rt, int32(index), nil
			}
		}
	}
	return "", 0, fmt.Errorf("replica %q is not <type>-<index>, e.g. worker-1", name)
}

// OfContainer is the TF_CONFIG the program in container c reads: its TF_CONFIG
// variable, or the one the agent composes from the cluster c carries in its place.
// "" when c has neither: a single-replica job has no TF_CONFIG.
func OfContainer(c *corev1.Container) (string, error) {
	var cluster, replica, inline string
	for _, e := range c.Env {
		switch e.Name {
		case EnvCluster:
			cluster = e.Value
		case tfjob.EnvReplica:
			replica = e.Value
		case tfjob.EnvTFConfig:
			inline = e.Value
		}
	}
	if cluster == "" {
		return inline, nil
	}
	return Compose(cluster, replica)
}

// Compose is the TF_CONFIG of replica (worker-1, as tfjob.EnvReplica holds it) of an
// encoded cluster, as EnvCluster holds it.
func Compose(cluster, replica string) (string, error) {
	c, err := Decode(cluster)
	if err != nil {
		return "", fmt.Errorf("composing TF_CONFIG: %w", err)
	}
	rt, index, err := ParseReplica(replica)
	if err != nil {
		return "", fmt.Errorf("composing TF_CONFIG: %s: %w", tfjob.EnvReplica, err)
	}
	if !c.has(rt, index) {
		return "", fmt.Errorf("composing TF_CONFIG: %s: replica %s is not in the job's cluster", tfjob.EnvReplica, replica)
	}
	value, err := c.For(rt, index)
	if err != nil {
		return "", fmt.Errorf("composing TF_CONFIG: %w", err)
	}
	return value, nil
}
