package build

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// tfConfigJSON is TF_CONFIG as TensorFlow's TFConfigClusterResolver reads it: json.loads
// of the variable. Cluster values stay generic, since a sparse cluster maps indexes to
// addresses where a dense one lists them.
type tfConfigJSON struct {
	Cluster     map[string]any `json:"cluster"`
	Task        map[string]any `json:"task"`
	Environment string         `json:"environment"`
}

// list is a dense cluster entry as JSON decodes it.
func list(addrs ...string) []any {
	out := make([]any, len(addrs))
	for i, a := range addrs {
		out[i] = a
	}
	return out
}

// task is a TF_CONFIG task as JSON decodes it.
func task(typ string, index int) map[string]any {
	return map[string]any{"type": typ, "index": float64(index)}
}

func decodeTFConfig(t *testing.T, s string) tfConfigJSON {
	t.Helper()
	var c tfConfigJSON
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatalf("TF_CONFIG %q is not JSON: %v", s, err)
	}
	return c
}

// withPort names the tensorflow container's port tfjob-port on replica type rt only.
func withPort(job *tfv1.TFJob, rt tfv1.ReplicaType, port int32) *tfv1.TFJob {
	c := &job.Spec.TFReplicaSpecs[rt].Template.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: tfjob.PortName, ContainerPort: port})
	return job
}

// TestGenTFConfig checks TF_CONFIG against TensorFlow's documented examples
// (tf.distribute.cluster_resolver.TFConfigClusterResolver and the parameter server
// training tutorial): the cluster lists chief, ps and worker addresses, never the
// evaluator, and the task names the replica itself.
func TestGenTFConfig(t *testing.T) {
	full := testutil.MakeTFJob("mnist", "ml").Chief().PS(2).Workers(3).Evaluator().Obj()
	fullCluster := map[string]any{
		"chief": list("mnist-chief-0.mnist.ml.svc:2222"),
		"ps":    list("mnist-ps-0.mnist.ml.svc:2222", "mnist-ps-1.mnist.ml.svc:2222"),
		"worker": list("mnist-worker-0.mnist.ml.svc:2222", "mnist-worker-1.mnist.ml.svc:2222",
			"mnist-worker-2.mnist.ml.svc:2222"),
	}
	cases := []struct {
		name  string
		job   *tfv1.TFJob
		rt    tfv1.ReplicaType
		index int32
		opts  AddressOptions
		want  tfConfigJSON
	}{
		{
			name: "chief",
			job:  full, rt: tfv1.ReplicaTypeChief, index: 0,
			want: tfConfigJSON{Cluster: fullCluster, Task: task("chief", 0), Environment: "cloud"},
		},
		{
			name: "second parameter server",
			job:  full, rt: tfv1.ReplicaTypePS, index: 1,
			want: tfConfigJSON{Cluster: fullCluster, Task: task("ps", 1), Environment: "cloud"},
		},
		{
			name: "third worker",
			job:  full, rt: tfv1.ReplicaTypeWorker, index: 2,
			want: tfConfigJSON{Cluster: fullCluster, Task: task("worker", 2), Environment: "cloud"},
		},
		{
			name: "evaluator is told its type but is not in the cluster",
			job:  full, rt: tfv1.ReplicaTypeEvaluator, index: 0,
			want: tfConfigJSON{Cluster: fullCluster, Task: task("evaluator", 0), Environment: "cloud"},
		},
		{
			name: "master is keyed master",
			job:  testutil.MakeTFJob("est", "ml").Master().Workers(1).Obj(),
			rt:   tfv1.ReplicaTypeMaster, index: 0,
			want: tfConfigJSON{
				Cluster: map[string]any{
					"master": list("est-master-0.est.ml.svc:2222"),
					"worker": list("est-worker-0.est.ml.svc:2222"),
				},
				Task: task("master", 0), Environment: "cloud",
			},
		},
		{
			name: "port from the container port named tfjob-port",
			job:  testutil.MakeTFJob("p", "ml").PS(1).Workers(1).Port(5000).Obj(),
			rt:   tfv1.ReplicaTypeWorker, index: 0,
			want: tfConfigJSON{
				Cluster: map[string]any{
					"ps":     list("p-ps-0.p.ml.svc:5000"),
					"worker": list("p-worker-0.p.ml.svc:5000"),
				},
				Task: task("worker", 0), Environment: "cloud",
			},
		},
		{
			name: "each replica type's own port; other container ports ignored",
			job: func() *tfv1.TFJob {
				job := withPort(testutil.MakeTFJob("p", "ml").PS(1).Workers(1).Obj(), tfv1.ReplicaTypePS, 3333)
				w := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0]
				w.Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}}
				return job
			}(),
			rt: tfv1.ReplicaTypePS, index: 0,
			want: tfConfigJSON{
				Cluster: map[string]any{
					"ps":     list("p-ps-0.p.ml.svc:3333"),
					"worker": list("p-worker-0.p.ml.svc:2222"),
				},
				Task: task("ps", 0), Environment: "cloud",
			},
		},
		{
			name: "port of the tensorflow container, not of the first",
			job: func() *tfv1.TFJob {
				job := testutil.MakeTFJob("p", "ml").Workers(2).Obj()
				spec := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec
				spec.Containers = append([]corev1.Container{{Name: "sidecar", Ports: []corev1.ContainerPort{{Name: tfjob.PortName, ContainerPort: 1111}}}},
					spec.Containers...)
				spec.Containers[1].Ports = []corev1.ContainerPort{{Name: tfjob.PortName, ContainerPort: 4444}}
				return job
			}(),
			rt: tfv1.ReplicaTypeWorker, index: 1,
			want: tfConfigJSON{
				Cluster: map[string]any{"worker": list("p-worker-0.p.ml.svc:4444", "p-worker-1.p.ml.svc:4444")},
				Task:    task("worker", 1), Environment: "cloud",
			},
		},
		{
			name: "cluster domain makes addresses fully qualified",
			job:  testutil.MakeTFJob("d", "team-a").PS(1).Workers(1).Obj(),
			rt:   tfv1.ReplicaTypeWorker, index: 0,
			opts: AddressOptions{ClusterDomain: "cluster.local"},
			want: tfConfigJSON{
				Cluster: map[string]any{
					"ps":     list("d-ps-0.d.team-a.svc.cluster.local:2222"),
					"worker": list("d-worker-0.d.team-a.svc.cluster.local:2222"),
				},
				Task: task("worker", 0), Environment: "cloud",
			},
		},
		{
			name: "host ports replace the port, replica by replica",
			job:  testutil.MakeTFJob("h", "ml").PS(1).Workers(2).HostNetwork().Obj(),
			rt:   tfv1.ReplicaTypeWorker, index: 1,
			opts: AddressOptions{HostPorts: map[ReplicaKey]int32{
				{tfv1.ReplicaTypePS, 0}:     20001,
				{tfv1.ReplicaTypeWorker, 0}: 20002,
				{tfv1.ReplicaTypeWorker, 1}: 20003,
			}},
			want: tfConfigJSON{
				Cluster: map[string]any{
					"ps":     list("h-ps-0.h.ml.svc:20001"),
					"worker": list("h-worker-0.h.ml.svc:20002", "h-worker-1.h.ml.svc:20003"),
				},
				Task: task("worker", 1), Environment: "cloud",
			},
		},
		{
			name: "dynamic worker: a worker's cluster lists only itself among the workers",
			job:  testutil.MakeTFJob("dw", "ml").Chief().PS(1).Workers(3).DynamicWorker().Obj(),
			rt:   tfv1.ReplicaTypeWorker, index: 2,
			want: tfConfigJSON{
				Cluster: map[string]any{
					"chief":  list("dw-chief-0.dw.ml.svc:2222"),
					"ps":     list("dw-ps-0.dw.ml.svc:2222"),
					"worker": map[string]any{"2": "dw-worker-2.dw.ml.svc:2222"},
				},
				Task: task("worker", 2), Environment: "cloud",
			},
		},
		{
			name: "dynamic worker: the chief still sees every worker",
			job:  testutil.MakeTFJob("dw", "ml").Chief().PS(1).Workers(2).DynamicWorker().Obj(),
			rt:   tfv1.ReplicaTypeChief, index: 0,
			want: tfConfigJSON{
				Cluster: map[string]any{
					"chief":  list("dw-chief-0.dw.ml.svc:2222"),
					"ps":     list("dw-ps-0.dw.ml.svc:2222"),
					"worker": list("dw-worker-0.dw.ml.svc:2222", "dw-worker-1.dw.ml.svc:2222"),
				},
				Task: task("chief", 0), Environment: "cloud",
			},
		},
		{
			name: "a replica type with zero replicas is left out",
			job:  testutil.MakeTFJob("z", "ml").PS(0).Workers(2).Obj(),
			rt:   tfv1.ReplicaTypeWorker, index: 0,
			want: tfConfigJSON{
				Cluster: map[string]any{"worker": list("z-worker-0.z.ml.svc:2222", "z-worker-1.z.ml.svc:2222")},
				Task:    task("worker", 0), Environment: "cloud",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := genTFConfig(tc.job, tc.rt, tc.index, tc.opts)
			if err != nil {
				t.Fatalf("TF_CONFIG: %v", err)
			}
			if diff := cmp.Diff(tc.want, decodeTFConfig(t, got)); diff != "" {
				t.Errorf("TF_CONFIG (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGenTFConfigGolden pins the exact text, field order included, of TensorFlow's
// parameter server example.
func TestGenTFConfigGolden(t *testing.T) {
	job := testutil.MakeTFJob("mnist", "ml").Chief().PS(2).Workers(2).Evaluator().Obj()
	want := `{"cluster":{"chief":["mnist-chief-0.mnist.ml.svc:2222"],` +
		`"ps":["mnist-ps-0.mnist.ml.svc:2222","mnist-ps-1.mnist.ml.svc:2222"],` +
		`"worker":["mnist-worker-0.mnist.ml.svc:2222","mnist-worker-1.mnist.ml.svc:2222"]},` +
		`"task":{"type":"worker","index":1},"environment":"cloud"}`
	got, err := genTFConfig(job, tfv1.ReplicaTypeWorker, 1, AddressOptions{})
	if err != nil {
		t.Fatalf("TF_CONFIG: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TF_CONFIG (-want +got):\n%s", diff)
	}
}

// TestGenTFConfigSingleNode checks that a job of one replica runs without a cluster.
func TestGenTFConfigSingleNode(t *testing.T) {
	cases := []struct {
		name string
		job  *tfv1.TFJob
		rt   tfv1.ReplicaType
		want string
	}{
		{name: "one worker", job: testutil.MakeTFJob("s", "ml").Workers(1).Obj(), rt: tfv1.ReplicaTypeWorker},
		{name: "one chief", job: testutil.MakeTFJob("s", "ml").Chief().Obj(), rt: tfv1.ReplicaTypeChief},
		{
			name: "one chief and an empty worker group",
			job:  testutil.MakeTFJob("s", "ml").Chief().Workers(0).Obj(), rt: tfv1.ReplicaTypeChief,
		},
		{
			name: "replicas unset defaults to one",
			job: func() *tfv1.TFJob {
				job := testutil.MakeTFJob("s", "ml").Workers(1).Obj()
				job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas = nil
				return job
			}(),
			rt: tfv1.ReplicaTypeWorker,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := genTFConfig(tc.job, tc.rt, 0, AddressOptions{})
			if err != nil {
				t.Fatalf("TF_CONFIG: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("TF_CONFIG (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodName(t *testing.T) {
	cases := []struct {
		name  string
		rt    tfv1.ReplicaType
		index int32
		want  string
	}{
		{name: "chief", rt: tfv1.ReplicaTypeChief, index: 0, want: "job-chief-0"},
		{name: "ps lower-cased", rt: tfv1.ReplicaTypePS, index: 1, want: "job-ps-1"},
		{name: "worker", rt: tfv1.ReplicaTypeWorker, index: 12, want: "job-worker-12"},
		{name: "evaluator", rt: tfv1.ReplicaTypeEvaluator, index: 0, want: "job-evaluator-0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tfjob.PodName("job", tc.rt, tc.index)); diff != "" {
				t.Errorf("PodName (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTFConfigsEncodeLikeTheStruct checks that the cluster encoded once per job and
// spliced into each replica's TF_CONFIG gives exactly what encoding TFConfig whole
// gives, for every replica of dense, sparse and host-network jobs.
func TestTFConfigsEncodeLikeTheStruct(t *testing.T) {
	dynamic := testutil.MakeTFJob("dyn", "ml").PS(2).Workers(3).Obj()
	dynamic.Spec.EnableDynamicWorker = true
	jobs := map[string]struct {
		job  *tfv1.TFJob
		opts AddressOptions
	}{
		"chief, PS, workers, evaluator": {job: testutil.MakeTFJob("mnist", "ml").Chief().PS(2).Workers(3).Evaluator().Obj()},
		"master and workers, FQDN":      {job: testutil.MakeTFJob("m", "ns").Master().Workers(2).Obj(), opts: AddressOptions{ClusterDomain: "cluster.local"}},
		"dynamic workers":               {job: dynamic},
		"host network": {job: testutil.MakeTFJob("h", "ns").PS(1).Workers(1).Obj(), opts: AddressOptions{HostPorts: map[ReplicaKey]int32{
			{tfv1.ReplicaTypePS, 0}: 31000, {tfv1.ReplicaTypeWorker, 0}: 31001}}},
	}
	for name, tc := range jobs {
		t.Run(name, func(t *testing.T) {
			configs := NewTFConfigs(tc.job, tc.opts, DefaultCompactTFConfigAbove)
			for _, rt := range tfv1.ReplicaTypes {
				for i := range tfjob.Replicas(tc.job.Spec.TFReplicaSpecs[rt]) {
					got, err := configs.For(rt, i)
					if err != nil {
						t.Fatal(err)
					}
					var whole struct {
						Cluster     map[string]any `json:"cluster"`
						Task        tfTask         `json:"task"`
						Environment string         `json:"environment"`
					}
					if err := json.Unmarshal([]byte(got), &whole); err != nil {
						t.Fatalf("%s %d: %v", rt, i, err)
					}
					want, err := json.Marshal(tfConfigDoc{Cluster: whole.Cluster, Task: whole.Task, Environment: whole.Environment})
					if err != nil {
						t.Fatal(err)
					}
					if got != string(want) {
						t.Errorf("%s %d:\n got %s\nwant %s", rt, i, got, want)
					}
					if whole.Task != (tfTask{Type: tfjob.TaskType(rt), Index: i}) {
						t.Errorf("%s %d: task %+v", rt, i, whole.Task)
					}
				}
			}
		})
	}
}
