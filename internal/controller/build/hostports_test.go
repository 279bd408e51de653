package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestAllocateHostPorts checks that every replica of a HostNetwork job gets its own
// port inside the range, and that a range too small for the job is refused.
func TestAllocateHostPorts(t *testing.T) {
	job := testutil.MakeTFJob("h", "ml").UID("0b9c3f4e-0000-4000-8000-000000000001").
		Chief().PS(2).Workers(3).Evaluator().HostNetwork().Obj()
	cases := []struct {
		name    string
		r       PortRange
		wantErr bool
	}{
		{name: "default range", r: DefaultHostPortRange},
		{name: "range exactly as large as the job, wrapping around", r: PortRange{Min: 30000, Max: 30006}},
		{name: "range one port too small", r: PortRange{Min: 30000, Max: 30005}, wantErr: true},
		{name: "empty range", r: PortRange{Min: 30000, Max: 29999}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ports, err := AllocateHostPorts(job, tc.r)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("AllocateHostPorts gave %d ports from %d-%d and no error", len(ports), tc.r.Min, tc.r.Max)
				}
				return
			}
			if err != nil {
				t.Fatalf("AllocateHostPorts: %v", err)
			}
			var wantKeys []ReplicaKey
			for _, rt := range tfv1.ReplicaTypes {
				for i := range tfjob.Replicas(job.Spec.TFReplicaSpecs[rt]) {
					wantKeys = append(wantKeys, ReplicaKey{rt, i})
				}
			}
			var gotKeys []ReplicaKey
			owner := map[int32]ReplicaKey{}
			for _, key := range wantKeys {
				port, ok := ports[key]
				if !ok {
					continue
				}
				gotKeys = append(gotKeys, key)
				if port < tc.r.Min || port > tc.r.Max {
					t.Errorf("%v got port %d, outside %d-%d", key, port, tc.r.Min, tc.r.Max)
				}
				if other, dup := owner[port]; dup {
					t.Errorf("%v and %v both got port %d", other, key, port)
				}
				owner[port] = key
			}
			if diff := cmp.Diff(wantKeys, gotKeys); diff != "" {
				t.Errorf("replicas with a port (-want +got):\n%s", diff)
			}
			if len(ports) != len(wantKeys) {
				t.Errorf("got %d ports, want one for each of the %d replicas", len(ports), len(wantKeys))
			}
		})
	}
}

// TestAllocateHostPortsStable checks that the ports are a function of the job's UID:
// the same after a controller restart, and at another offset for another job.
func TestAllocateHostPortsStable(t *testing.T) {
	jobWithUID := func(uid string) *tfv1.TFJob {
		return testutil.MakeTFJob("h", "ml").UID(uid).PS(2).Workers(3).HostNetwork().Obj()
	}
	alloc := func(job *tfv1.TFJob) map[ReplicaKey]int32 {
		t.Helper()
		ports, err := AllocateHostPorts(job, DefaultHostPortRange)
		if err != nil {
			t.Fatalf("AllocateHostPorts: %v", err)
		}
		return ports
	}
	first := alloc(jobWithUID("uid-a"))
	if diff := cmp.Diff(first, alloc(jobWithUID("uid-a"))); diff != "" {
		t.Errorf("same UID, other ports (-first +second):\n%s", diff)
	}
	other := alloc(jobWithUID("uid-b"))
	key := ReplicaKey{tfv1.ReplicaTypePS, 0}
	if first[key] == other[key] {
		t.Errorf("jobs uid-a and uid-b both start at port %d: want a different offset per job", first[key])
	}
}
