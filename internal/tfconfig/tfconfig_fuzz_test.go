package tfconfig

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// FuzzCompose: whatever TFK8S_CLUSTER and the replica hold, Compose returns an error
// or a TF_CONFIG that is valid JSON of TensorFlow's shape, whose task is the replica
// asked for and lies in the cluster (an evaluator's in its own count), and whose size
// grows with the cluster's replicas, not past them.
func FuzzCompose(f *testing.F) {
	for _, seed := range []struct{ cluster, replica string }{
		{`{"job":"mnist","namespace":"default","replicas":[{"type":"Chief","count":1,"port":2222},{"type":"Worker","count":3,"port":2222}]}`, "worker-2"},
		{`{"job":"j","namespace":"ns","domain":"cluster.local","dynamicWorker":true,"replicas":[{"type":"PS","count":2,"port":2222},{"type":"Worker","count":2,"port":2222}]}`, "worker-1"},
		{`{"job":"h","namespace":"ns","replicas":[{"type":"Worker","count":4,"hostPorts":[[30000,2],[30010,2]]},{"type":"Evaluator","count":1,"hostPorts":[[30020,1]]}]}`, "evaluator-0"},
		{`{"job":"one","namespace":"ns","replicas":[{"type":"Worker","count":1,"port":2222}]}`, "worker-0"},
		{`{"job":"j","namespace":"ns","replicas":[{"type":"Worker","count":2,"hostPorts":[[1,1]]}]}`, "worker-1"},
		{`{"job":"j\"<","namespace":"ns","replicas":[{"type":"Worker","count":2,"port":2222}]}`, "worker-1"},
		{`{"replicas":[{"type":"Trainer","count":1}]}`, "ps-0"},
		{`not json`, "worker-x"},
		// Two billion workers: refused before TF_CONFIG would list them.
		{`{"job":"j","namespace":"ns","replicas":[{"type":"Worker","count":2000000000,"port":2222}]}`, "worker-0"},
	} {
		f.Add(seed.cluster, seed.replica)
	}
	f.Fuzz(func(t *testing.T, cluster, replica string) {
		got, err := Compose(cluster, replica)
		if err != nil || got == "" {
			return
		}
		c, err := Decode(cluster)
		if err != nil {
			t.Fatalf("Compose took a cluster Decode refuses: %v", err)
		}
		var tf struct {
			Cluster map[string]json.RawMessage `json:"cluster"`
			Task    struct {
				Type  string `json:"type"`
				Index int32  `json:"index"`
			} `json:"task"`
			Environment string `json:"environment"`
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(got)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&tf); err != nil {
			t.Fatalf("TF_CONFIG %s is not TensorFlow's JSON: %v", got, err)
		}
		rt, index, _ := ParseReplica(replica)
		if tf.Task.Type != tfjob.TaskType(rt) || tf.Task.Index != index || tf.Environment != "cloud" {
			t.Errorf("TF_CONFIG %s is not replica %s's", got, replica)
		}
		i := slices.IndexFunc(c.Replicas, func(r Replicas) bool { return r.Type == rt })
		if i < 0 || index >= c.Replicas[i].Count {
			t.Errorf("replica %s is not in the cluster %s, yet has TF_CONFIG %s", replica, cluster, got)
		}
		// Each replica's address is its pod's name and the job's, namespace and domain.
		perReplica := 2*len(c.Job) + len(c.Namespace) + len(c.Domain) + 64
		if max := (int(c.Total()) + 1) * perReplica * 6; len(got) > max {
			t.Errorf("TF_CONFIG of %d bytes for %d replicas (at most %d)", len(got), c.Total(), max)
		}
		if rt != tfv1.ReplicaTypeEvaluator {
			if _, ok := tf.Cluster[tfjob.TaskType(rt)]; !ok {
				t.Errorf("the cluster of TF_CONFIG %s lacks the task's own type", got)
			}
		}
	})
}
