package controller

import (
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// typesToStart returns the replica types whose pods may be created now. Under PSFirst,
// the chief, master, workers and evaluator wait until every parameter server is Running,
// so that no worker spends its start-up retrying connections to absent parameter
// servers.
func typesToStart(job *tfv1.TFJob, o *observation) []tfv1.ReplicaType {
	var present []tfv1.ReplicaType
	for _, rt := range tfv1.ReplicaTypes {
		if job.Spec.TFReplicaSpecs[rt] != nil {
			present = append(present, rt)
		}
	}
	if job.Spec.StartupPolicy != tfv1.StartupPolicyPSFirst || job.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS] == nil {
		return present
	}
	if allReplicasRunning(job, o, []tfv1.ReplicaType{tfv1.ReplicaTypePS}) {
		return present
	}
	return []tfv1.ReplicaType{tfv1.ReplicaTypePS}
}
