package tfjob

import (
	"testing"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

func TestServesProgress(t *testing.T) {
	job := func(types []tfv1.ReplicaType, mutate func(*tfv1.TFJob)) *tfv1.TFJob {
		j := &tfv1.TFJob{Spec: tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{},
			Artifacts: &tfv1.Artifacts{Destination: "s3://b/runs/", Paths: []string{"/workspace/model"}}}}
		for _, rt := range types {
			j.Spec.TFReplicaSpecs[rt] = &tfv1.ReplicaSpec{}
		}
		if mutate != nil {
			mutate(j)
		}
		return j
	}
	chiefAndWorkers := []tfv1.ReplicaType{tfv1.ReplicaTypeChief, tfv1.ReplicaTypeWorker, tfv1.ReplicaTypePS}
	cases := []struct {
		name  string
		job   *tfv1.TFJob
		rt    tfv1.ReplicaType
		index int32
		want  bool
	}{
		{"the chief leads", job(chiefAndWorkers, nil), tfv1.ReplicaTypeChief, 0, true},
		{"worker 0 follows a chief", job(chiefAndWorkers, nil), tfv1.ReplicaTypeWorker, 0, false},
		{"worker 0 leads workers alone", job([]tfv1.ReplicaType{tfv1.ReplicaTypeWorker}, nil), tfv1.ReplicaTypeWorker, 0, true},
		{"worker 1 never", job([]tfv1.ReplicaType{tfv1.ReplicaTypeWorker}, nil), tfv1.ReplicaTypeWorker, 1, false},
		{"no artifacts: no event files read", job(chiefAndWorkers, func(j *tfv1.TFJob) { j.Spec.Artifacts = nil }), tfv1.ReplicaTypeChief, 0, false},
		{"on the host's network a fixed port could be taken", job(chiefAndWorkers, func(j *tfv1.TFJob) {
			j.Spec.Networking.Mode = tfv1.NetworkingModeHostNetwork
		}), tfv1.ReplicaTypeChief, 0, false},
		{"nor when the lead's template is on the host's network", job(chiefAndWorkers, func(j *tfv1.TFJob) {
			j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeChief].Template.Spec.HostNetwork = true
		}), tfv1.ReplicaTypeChief, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ServesProgress(tc.job, tc.rt, tc.index); got != tc.want {
				t.Errorf("ServesProgress(%s-%d) = %v, want %v", tc.rt, tc.index, got, tc.want)
			}
		})
	}
}
