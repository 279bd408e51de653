package tfconfig

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// TestPortRuns checks that host ports in index order encode as runs of consecutive
// ports, and that every replica's port is read back from them.
func TestPortRuns(t *testing.T) {
	tests := []struct {
		name  string
		ports []int32
		want  []PortRun
	}{
		{name: "one run", ports: []int32{20005, 20006, 20007}, want: []PortRun{{20005, 3}}},
		{name: "wrapping around the range", ports: []int32{29998, 29999, 20000, 20001}, want: []PortRun{{29998, 2}, {20000, 2}}},
		{name: "scattered", ports: []int32{5, 9, 10, 7}, want: []PortRun{{5, 1}, {9, 2}, {7, 1}}},
		{name: "none", ports: nil, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs := PortRuns(tc.ports)
			if diff := cmp.Diff(tc.want, runs); diff != "" {
				t.Errorf("PortRuns (-want +got):\n%s", diff)
			}
			r := Replicas{Type: tfv1.ReplicaTypeWorker, Count: int32(len(tc.ports)), HostPorts: runs}
			for i, want := range tc.ports {
				if got, err := r.port(int32(i)); err != nil || got != want {
					t.Errorf("port(%d) = %d, %v; want %d", i, got, err, want)
				}
			}
			if len(tc.ports) > 0 {
				if _, err := r.port(int32(len(tc.ports))); err == nil {
					t.Errorf("port(%d) past the runs: no error", len(tc.ports))
				}
			}
		})
	}
}

// TestClusterRoundTrip checks that a cluster decodes to what was encoded, host port
// runs included, and that its size does not grow with the replica count.
func TestClusterRoundTrip(t *testing.T) {
	c := &Cluster{Job: "big", Namespace: "ml", Domain: "cluster.local", DynamicWorker: true, Replicas: []Replicas{
		{Type: tfv1.ReplicaTypePS, Count: 2, Port: 2222, HostPorts: []PortRun{{29999, 1}, {20000, 1}}},
		{Type: tfv1.ReplicaTypeWorker, Count: 1000, Port: 2222, HostPorts: []PortRun{{20001, 1000}}},
	}}
	s, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	c.Replicas[1].Count, c.Replicas[1].HostPorts[0].Count = 10000, 10000
	if s10k, _ := c.Encode(); len(s10k)-len(s) != 2 {
		t.Errorf("encoded cluster: %d bytes at 1,000 workers, %d at 10,000; want only the two counts one digit longer", len(s), len(s10k))
	}
}

// TestDecodeErrors checks that a cluster the agent cannot use is refused with a message
// naming the variable.
func TestDecodeErrors(t *testing.T) {
	for name, s := range map[string]string{
		"not JSON":             `{"job":`,
		"unknown replica type": `{"job":"j","namespace":"n","replicas":[{"type":"Launcher","count":1}]}`,
		"negative count":       `{"job":"j","namespace":"n","replicas":[{"type":"Worker","count":-1}]}`,
		"bad host port run":    `{"job":"j","namespace":"n","replicas":[{"type":"Worker","count":1,"hostPorts":[["a",1]]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(s); err == nil || !strings.Contains(err.Error(), EnvCluster) {
				t.Errorf("Decode(%s) = %v; want an error naming %s", s, err, EnvCluster)
			}
		})
	}
}

// TestParseReplica checks that replica names read back as tfjob.ReplicaName writes them.
func TestParseReplica(t *testing.T) {
	for name, want := range map[string]struct {
		rt    tfv1.ReplicaType
		index int32
		ok    bool
	}{
		"worker-12":  {tfv1.ReplicaTypeWorker, 12, true},
		"ps-0":       {tfv1.ReplicaTypePS, 0, true},
		"chief-0":    {tfv1.ReplicaTypeChief, 0, true},
		"evaluator":  {ok: false},
		"worker--1":  {ok: false},
		"Worker-1":   {ok: false},
		"launcher-0": {ok: false},
	} {
		rt, index, err := ParseReplica(name)
		if (err == nil) != want.ok || rt != want.rt || index != want.index {
			t.Errorf("ParseReplica(%q) = %s, %d, %v; want %s, %d, ok %v", name, rt, index, err, want.rt, want.index, want.ok)
		}
	}
}

// TestOfContainer checks the TF_CONFIG read from a container: the variable itself, or
// composed from the cluster and the replica, or "" for neither.
func TestOfContainer(t *testing.T) {
	cluster := `{"job":"j","namespace":"n","replicas":[{"type":"PS","count":1,"port":2222},{"type":"Worker","count":2,"port":2222}]}`
	composed := `{"cluster":{"ps":["j-ps-0.j.n.svc:2222"],"worker":["j-worker-0.j.n.svc:2222","j-worker-1.j.n.svc:2222"]},` +
		`"task":{"type":"worker","index":1},"environment":"cloud"}`
	tests := []struct {
		name string
		env  []corev1.EnvVar
		want string
	}{
		{name: "inline", env: []corev1.EnvVar{{Name: "TF_CONFIG", Value: `{"x":1}`}}, want: `{"x":1}`},
		{name: "from the cluster", env: []corev1.EnvVar{{Name: EnvCluster, Value: cluster}, {Name: "TFK8S_REPLICA", Value: "worker-1"}}, want: composed},
		{name: "neither", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OfContainer(&corev1.Container{Env: tc.env})
			if err != nil || got != tc.want {
				t.Errorf("OfContainer = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
