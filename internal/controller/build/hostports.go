package build

import (
	"fmt"
	"hash/fnv"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// PortRange is an inclusive range of host ports for HostNetwork jobs.
type PortRange struct{ Min, Max int32 }

// DefaultHostPortRange is the range HostNetwork replicas get their ports from.
var DefaultHostPortRange = PortRange{Min: 20000, Max: 29999}

// AllocateHostPorts gives every replica of a HostNetwork job a distinct port from r.
// The ports are a pure function of the job's UID, so they are the same after a
// controller restart, and start at a different offset for every job so that jobs
// sharing a node rarely collide; each pod declares its port as a hostPort, so the
// scheduler never puts two pods using one port on the same node.
func AllocateHostPorts(job *tfv1.TFJob, r PortRange) (map[ReplicaKey]int32, error) {
	size := r.Max - r.Min + 1
	total := tfjob.TotalReplicas(job)
	if size <= 0 || total > size {
		return nil, fmt.Errorf("host port range %d-%d has %d ports, the job needs %d", r.Min, r.Max, max(size, 0), total)
	}
	h := fnv.New32a()
	h.Write([]byte(job.UID))
	offset := int32(h.Sum32() % uint32(size))
	ports := make(map[ReplicaKey]int32, total)
	var n int32
	for _, rt := range tfv1.ReplicaTypes {
		for i := range tfjob.Replicas(job.Spec.TFReplicaSpecs[rt]) {
			ports[ReplicaKey{rt, i}] = r.Min + (offset+n)%size
			n++
		}
	}
	return ports, nil
}
