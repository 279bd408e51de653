package build

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfconfig"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

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

// How much of the cluster a pod carries. TF_CONFIG grows with the job (47 bytes an
// address), and every pod carries it: O(n²) bytes per job.
const (
	// InlineTFConfigLimit is the largest TF_CONFIG written into a pod that runs without
	// the agent: 2,600 to 4,000 replicas (33 to 50 bytes an address, as the job's and
	// namespace's names are long). A larger job without the agent fails: its pods
	// together would hold 350 MB and more of etcd.
	InlineTFConfigLimit = 128 << 10
	// DefaultCompactTFConfigAbove is the size of TF_CONFIG beyond which a pod run by the
	// agent carries the constant-size tfconfig.Cluster instead (170 to 250 replicas),
	// for the agent to compose TF_CONFIG from. Smaller jobs' pods keep TF_CONFIG itself,
	// which a shell in the pod (kubectl exec) sees as well as tfk8s describe and the
	// dashboard.
	DefaultCompactTFConfigAbove = 8 << 10
)

// TFConfigs builds the TF_CONFIG of every replica of one job, or the constant-size
// cluster its pods carry instead. The cluster, the same for all replicas and as long as
// the job is large, is encoded once.
type TFConfigs struct {
	cluster *tfconfig.Cluster
	// tasks is the encoded "cluster" of TF_CONFIG, or "" for a single-replica job.
	tasks string
	// compact is cluster encoded for tfconfig.EnvCluster, when TF_CONFIG is larger
	// than the compactAbove NewTFConfigs was given.
	compact string
	err     error
}

// NewTFConfigs prepares the TF_CONFIGs of job's replicas. The pods of a job run by the
// agent carry the cluster in place of a TF_CONFIG longer than compactAbove bytes
// (DefaultCompactTFConfigAbove; 0: every pod of a job with more than one replica).
func NewTFConfigs(job *tfv1.TFJob, opts AddressOptions, compactAbove int) *TFConfigs {
	t := &TFConfigs{cluster: jobCluster(job, opts)}
	if t.cluster.Total() > 1 {
		t.tasks, t.err = t.cluster.EncodeTasks(nil, 0)
	}
	if t.err == nil && t.tasks != "" && len(t.tasks) > compactAbove {
		t.compact, t.err = t.cluster.Encode()
	}
	return t
}

// NewTFConfigs prepares the TF_CONFIGs of job's replicas as o says.
func (o PodOptions) NewTFConfigs(job *tfv1.TFJob) *TFConfigs {
	above := DefaultCompactTFConfigAbove
	if o.CompactTFConfigAbove != nil {
		above = *o.CompactTFConfigAbove
	}
	return NewTFConfigs(job, o.AddressOptions, above)
}

// For returns the TF_CONFIG of one replica, or "" when the job has a single replica in
// all: a single-node job runs TensorFlow locally, without a cluster.
func (t *TFConfigs) For(rt tfv1.ReplicaType, index int32) (string, error) {
	if t.err != nil || t.tasks == "" {
		return "", t.err
	}
	if t.cluster.DynamicWorker && rt == tfv1.ReplicaTypeWorker {
		return t.cluster.For(rt, index)
	}
	return tfconfig.Splice(t.tasks, rt, index), nil
}

// setTFConfigEnv gives c its TF_CONFIG, or the cluster the agent composes it from, in
// place of any the template set.
func setTFConfigEnv(c *corev1.Container, env corev1.EnvVar) {
	if env.Name != tfjob.EnvTFConfig {
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == tfjob.EnvTFConfig })
	}
	tfjob.SetEnv(c, env)
}

// Env is the variable that gives one replica its TF_CONFIG: TF_CONFIG itself, or
// tfconfig.EnvCluster when the agent runs the pod and TF_CONFIG is over the compaction
// size; ok is false for a single-replica job. The agent composes TF_CONFIG from the
// cluster, so that a large job's pods stay small.
func (t *TFConfigs) Env(rt tfv1.ReplicaType, index int32, agent bool) (env corev1.EnvVar, ok bool, err error) {
	if t.err != nil || t.tasks == "" {
		return corev1.EnvVar{}, false, t.err
	}
	if agent && t.compact != "" {
		return corev1.EnvVar{Name: tfconfig.EnvCluster, Value: t.compact}, true, nil
	}
	if msg := t.Refusal(agent); msg != "" {
		return corev1.EnvVar{}, false, errors.New(msg)
	}
	value, err := t.For(rt, index)
	return corev1.EnvVar{Name: tfjob.EnvTFConfig, Value: value}, err == nil, err
}

// Refusal says why the job's pods cannot carry their TF_CONFIG: without the agent, it
// would exceed InlineTFConfigLimit. "" when they can.
func (t *TFConfigs) Refusal(agent bool) string {
	if agent || len(t.tasks) <= InlineTFConfigLimit {
		return ""
	}
	return fmt.Sprintf("the TF_CONFIG of each of the job's %d replicas would hold %d KiB of addresses, over the %d KiB "+
		"a pod run without the tfk8s agent may carry; run the job under the agent (set spec.code, spec.data or "+
		"spec.artifacts): its pods carry a constant-size description of the cluster and the agent composes TF_CONFIG",
		t.cluster.Total(), len(t.tasks)>>10, InlineTFConfigLimit>>10)
}

// jobCluster is what job's TF_CONFIG is a function of.
func jobCluster(job *tfv1.TFJob, opts AddressOptions) *tfconfig.Cluster {
	c := &tfconfig.Cluster{
		Job:           job.Name,
		Namespace:     job.Namespace,
		Domain:        opts.ClusterDomain,
		DynamicWorker: job.Spec.EnableDynamicWorker,
		// A program may dial training-operator's names itself; the job asked for them.
		ServicePerReplica: ServicePerReplica(job),
	}
	for _, rt := range tfv1.ReplicaTypes {
		n := tfjob.Replicas(job.Spec.TFReplicaSpecs[rt])
		if n <= 0 {
			continue
		}
		r := tfconfig.Replicas{Type: rt, Count: n, Port: ReplicaPort(job, rt)}
		if len(opts.HostPorts) > 0 {
			ports := make([]int32, n)
			for i := range ports {
				ports[i] = r.Port
				if p, ok := opts.HostPorts[ReplicaKey{rt, int32(i)}]; ok {
					ports[i] = p
				}
			}
			r.HostPorts = tfconfig.PortRuns(ports)
		}
		c.Replicas = append(c.Replicas, r)
	}
	return c
}

// ReplicaPort is the container port named tfjob-port of the replica type's TensorFlow
// container, else tfjob.DefaultPort.
func ReplicaPort(job *tfv1.TFJob, rt tfv1.ReplicaType) int32 {
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
