package build

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfconfig"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// referenceTFConfig is TF_CONFIG as tfk8s wrote it into every pod before the cluster
// was stored once per job: the whole TFConfig struct encoded by json.Marshal, addresses
// built one by one. The bytes a program reads must not change.
func referenceTFConfig(t *testing.T, job *tfv1.TFJob, rt tfv1.ReplicaType, index int32, opts AddressOptions) string {
	t.Helper()
	if tfjob.TotalReplicas(job) <= 1 {
		return ""
	}
	address := func(typ tfv1.ReplicaType, i int32) string {
		port := ReplicaPort(job, typ)
		if p, ok := opts.HostPorts[ReplicaKey{typ, i}]; ok {
			port = p
		}
		host := fmt.Sprintf("%s-%s-%d.%s.%s.svc", job.Name, strings.ToLower(string(typ)), i, job.Name, job.Namespace)
		if opts.ClusterDomain != "" {
			host += "." + opts.ClusterDomain
		}
		return fmt.Sprintf("%s:%d", host, port)
	}
	cluster := map[string]any{}
	for _, typ := range tfv1.ReplicaTypes {
		n := tfjob.Replicas(job.Spec.TFReplicaSpecs[typ])
		if typ == tfv1.ReplicaTypeEvaluator || n == 0 {
			continue
		}
		if job.Spec.EnableDynamicWorker && rt == tfv1.ReplicaTypeWorker && typ == tfv1.ReplicaTypeWorker {
			cluster["worker"] = map[string]string{strconv.Itoa(int(index)): address(typ, index)}
			continue
		}
		var addrs []string
		for i := range n {
			addrs = append(addrs, address(typ, i))
		}
		cluster[strings.ToLower(string(typ))] = addrs
	}
	data, err := json.Marshal(tfConfigDoc{Cluster: cluster, Task: tfTask{Type: strings.ToLower(string(rt)), Index: index}, Environment: "cloud"})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// tfConfigDoc is TF_CONFIG as TensorFlow's TFConfigClusterResolver reads it, encoded
// whole by json.Marshal: the reference the bytes tfk8s splices together must equal.
type tfConfigDoc struct {
	// Cluster maps a task type to its addresses, index by index; with a sparse
	// cluster, "worker" maps indexes to addresses.
	Cluster     map[string]any `json:"cluster"`
	Task        tfTask         `json:"task"`
	Environment string         `json:"environment"`
}

// tfTask names one task of the cluster.
type tfTask struct {
	Type  string `json:"type"`
	Index int32  `json:"index"`
}

// genTFConfig is the TF_CONFIG of one replica of job, under the default compaction.
func genTFConfig(job *tfv1.TFJob, rt tfv1.ReplicaType, index int32, opts AddressOptions) (string, error) {
	return NewTFConfigs(job, opts, DefaultCompactTFConfigAbove).For(rt, index)
}

// tfConfigShape is a job and how its replicas are addressed.
type tfConfigShape struct {
	name string
	job  *tfv1.TFJob
	// hostPorts, in HostNetwork mode, allocates ports from this range.
	hostPorts *PortRange
	domain    string
	// compactAbove is the controller's --compact-tf-config-above, its default when nil.
	compactAbove *int
}

// tfConfigShapes are jobs of every shape TF_CONFIG takes: each replica type, sparse,
// HostNetwork (its ports wrapping around the end of the range), a cluster domain, a
// port per replica type, a single replica, jobs large enough for the agent's pods to
// carry the cluster instead, and the size beyond which they do set to 0 and to 1 MiB.
func tfConfigShapes() []tfConfigShape {
	withAgent := func(w *testutil.TFJobWrapper) *tfv1.TFJob {
		return w.Code("s3://bucket/code/sha256-abc.tar.gz").Obj()
	}
	ports := func(job *tfv1.TFJob) *tfv1.TFJob {
		withPort(job, tfv1.ReplicaTypePS, 3333)
		return withPort(job, tfv1.ReplicaTypeWorker, 4444)
	}
	small := &PortRange{Min: 30000, Max: 30006}
	return []tfConfigShape{
		{name: "PS and workers", job: testutil.MakeTFJob("mnist", "ml").PS(2).Workers(3).Obj()},
		{name: "chief, PS, workers, evaluator", job: testutil.MakeTFJob("mnist", "ml").Chief().PS(2).Workers(3).Evaluator().Obj()},
		{name: "master and workers, cluster domain", job: testutil.MakeTFJob("m", "ns").Master().Workers(2).Obj(), domain: "cluster.local"},
		{name: "worker and evaluator", job: testutil.MakeTFJob("w", "ns").Workers(1).Evaluator().Obj()},
		{name: "a port per replica type", job: ports(testutil.MakeTFJob("p", "ns").PS(1).Workers(2).Obj())},
		{name: "dynamic workers", job: testutil.MakeTFJob("dyn", "ml").PS(2).Workers(3).DynamicWorker().Obj()},
		{name: "single replica", job: testutil.MakeTFJob("one", "ml").Workers(1).Obj()},
		{name: "host network, ports wrapping around", job: testutil.MakeTFJob("h", "ns").UID("uid-7").Chief().PS(2).Workers(4).HostNetwork().Obj(), hostPorts: small},
		{name: "agent, 300 workers", job: withAgent(testutil.MakeTFJob("big", "ml").PS(2).Workers(300))},
		{name: "agent, 300 dynamic workers, domain", job: withAgent(testutil.MakeTFJob("dyn", "ml").Chief().PS(1).Workers(300).Evaluator().DynamicWorker()), domain: "example.org"},
		{name: "agent, 300 host network workers", job: withAgent(testutil.MakeTFJob("hn", "ml").UID("uid-3").PS(1).Workers(300).HostNetwork()), hostPorts: &PortRange{Min: 40000, Max: 40400}},
		{name: "agent, chief, PS and workers, compact above 0 bytes", job: withAgent(testutil.MakeTFJob("ps", "ml").Chief().PS(2).Workers(3)), compactAbove: ptr.To(0)},
		{name: "agent, dynamic workers and evaluator, domain, compact above 0 bytes", job: withAgent(testutil.MakeTFJob("dyn", "ml").Chief().Workers(2).Evaluator().DynamicWorker()), domain: "example.org", compactAbove: ptr.To(0)},
		{name: "PS and workers without the agent, compact above 0 bytes", job: testutil.MakeTFJob("ps", "ml").PS(2).Workers(3).Obj(), compactAbove: ptr.To(0)},
		{name: "single replica under the agent, compact above 0 bytes", job: withAgent(testutil.MakeTFJob("one", "ml").Workers(1)), compactAbove: ptr.To(0)},
		{name: "300 workers under the agent, compact above 1 MiB", job: withAgent(testutil.MakeTFJob("big", "ml").PS(2).Workers(300)), compactAbove: ptr.To(1 << 20)},
	}
}

// options are the address options the controller builds the shape's pods with.
func (s tfConfigShape) options(t *testing.T) PodOptions {
	t.Helper()
	opts := PodOptions{AddressOptions: AddressOptions{ClusterDomain: s.domain}, CompactTFConfigAbove: s.compactAbove}
	if s.hostPorts != nil {
		ports, err := AllocateHostPorts(s.job, *s.hostPorts)
		if err != nil {
			t.Fatal(err)
		}
		opts.HostPorts = ports
	}
	return opts
}

// TestProgramsSeeTheSameTFConfig builds every pod of jobs of every shape and reads the
// TF_CONFIG its program sees: the variable itself, or what the agent composes from the
// cluster a large job's pods carry instead. Both must be, byte for byte, what tfk8s
// wrote into every pod before.
func TestProgramsSeeTheSameTFConfig(t *testing.T) {
	for _, s := range tfConfigShapes() {
		t.Run(s.name, func(t *testing.T) {
			opts := s.options(t)
			compact := 0
			for _, rt := range tfv1.ReplicaTypes {
				for i := range tfjob.Replicas(s.job.Spec.TFReplicaSpecs[rt]) {
					pod := buildPod(t, s.job, rt, i, opts)
					got, fromCluster := programTFConfig(t, pod)
					if fromCluster {
						compact++
					}
					if want := referenceTFConfig(t, s.job, rt, i, opts.AddressOptions); got != want {
						t.Fatalf("%s: the program sees\n%s\nwant\n%s", tfjob.ReplicaName(rt, i), got, want)
					}
				}
			}
			if large := strings.HasPrefix(s.name, "agent"); (compact > 0) != large {
				t.Errorf("%d pods carry the cluster instead of TF_CONFIG; want them all to iff the job is large and runs under the agent", compact)
			}
		})
	}
}

// programTFConfig is the TF_CONFIG the program in pod sees, and whether the agent
// composes it from the cluster the pod carries.
func programTFConfig(t *testing.T, pod *corev1.Pod) (string, bool) {
	t.Helper()
	c := tfjob.TensorFlowContainer(pod.Spec.Containers)
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	encoded, ok := env[tfconfig.EnvCluster]
	if !ok {
		return env[tfjob.EnvTFConfig], false
	}
	if _, both := env[tfjob.EnvTFConfig]; both {
		t.Errorf("pod %s carries both %s and TF_CONFIG", pod.Name, tfconfig.EnvCluster)
	}
	cluster, err := tfconfig.Decode(encoded)
	if err != nil {
		t.Fatal(err)
	}
	rt, index, err := tfconfig.ParseReplica(env[tfjob.EnvReplica])
	if err != nil {
		t.Fatal(err)
	}
	got, err := cluster.For(rt, index)
	if err != nil {
		t.Fatal(err)
	}
	return got, true
}

// TestTFConfigBytesPerPod checks what a pod carries for its TF_CONFIG as the job grows:
// under the agent, the same few hundred bytes at 1,000 and 10,000 workers; without
// it, TF_CONFIG itself, refused beyond InlineTFConfigLimit with a message that says
// what to do.
func TestTFConfigBytesPerPod(t *testing.T) {
	carried := func(job *tfv1.TFJob) (string, error) {
		pod, err := Pod(job, tfv1.ReplicaTypeWorker, 0, PodOptions{}, nil)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, e := range tfjob.TensorFlowContainer(pod.Spec.Containers).Env {
			if e.Name == tfjob.EnvTFConfig || e.Name == tfconfig.EnvCluster {
				b.WriteString(e.Name + "=" + e.Value)
			}
		}
		return b.String(), nil
	}
	agentJob := func(workers int32) *tfv1.TFJob {
		return testutil.MakeTFJob("big", "ml").PS(1).Workers(workers).Code("s3://bucket/code/sha256-abc.tar.gz").Obj()
	}
	at1k, err := carried(agentJob(1000))
	if err != nil {
		t.Fatal(err)
	}
	at10k, err := carried(agentJob(10000))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("under the agent, a pod carries %d bytes at 1,000 workers, %d at 10,000: %s", len(at1k), len(at10k), at10k)
	if len(at10k) > 300 || len(at10k)-len(at1k) > 1 {
		t.Errorf("under the agent, a pod carries %d bytes at 1,000 workers and %d at 10,000; want the same few hundred", len(at1k), len(at10k))
	}

	inline, err := carried(testutil.MakeTFJob("big", "ml").PS(1).Workers(1000).Obj())
	if err != nil || !strings.HasPrefix(inline, tfjob.EnvTFConfig+"=") {
		t.Fatalf("without the agent, 1,000 workers: %.60q, %v; want TF_CONFIG inline", inline, err)
	}
	t.Logf("without the agent, a pod of 1,000 workers carries %d bytes", len(inline))

	tooLarge := testutil.MakeTFJob("big", "ml").PS(1).Workers(5000).Obj()
	_, err = carried(tooLarge)
	want := "the TF_CONFIG of each of the job's 5001 replicas would hold 164 KiB of addresses, over the 128 KiB a pod " +
		"run without the tfk8s agent may carry; run the job under the agent (set spec.code, spec.data or spec.artifacts)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("without the agent, 5,000 workers: got error %v, want one starting %q", err, want)
	}
	if got := NewTFConfigs(tooLarge, AddressOptions{}, DefaultCompactTFConfigAbove).Refusal(false); !strings.HasPrefix(got, want) {
		t.Errorf("Refusal = %q, want %q...", got, want)
	}
}
