package controller

import (
	"fmt"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// successPolicyMet reports whether the job has succeeded, and says why.
//
// By default the job succeeds when its chief (or master) succeeds, or, with neither,
// when worker 0 does: that is the replica that runs the training loop to its end and
// writes the final checkpoint. Under AllWorkers, every worker must succeed, and the
// chief or master too if there is one.
func successPolicyMet(job *tfv1.TFJob, st *tfv1.TFJobStatus) (bool, string) {
	succeeded := func(rt tfv1.ReplicaType, i int32) bool {
		rs := st.ReplicaStatuses[rt]
		return rs != nil && parseIndexes(rs.SucceededIndexes).Has(i)
	}
	leader := tfv1.ReplicaType("")
	for _, rt := range []tfv1.ReplicaType{tfv1.ReplicaTypeChief, tfv1.ReplicaTypeMaster} {
		if tfjob.Replicas(job.Spec.TFReplicaSpecs[rt]) > 0 {
			leader = rt
		}
	}
	if job.Spec.SuccessPolicy != nil && *job.Spec.SuccessPolicy == tfv1.SuccessPolicyAllWorkers {
		if leader != "" && !succeeded(leader, 0) {
			return false, ""
		}
		n := tfjob.Replicas(job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker])
		for i := range n {
			if !succeeded(tfv1.ReplicaTypeWorker, i) {
				return false, ""
			}
		}
		return true, fmt.Sprintf("TFJob %s/%s succeeded: all %d workers succeeded", job.Namespace, job.Name, n)
	}
	if leader != "" {
		if succeeded(leader, 0) {
			return true, fmt.Sprintf("TFJob %s/%s succeeded: its %s succeeded", job.Namespace, job.Name, tfjob.TaskType(leader))
		}
		return false, ""
	}
	if succeeded(tfv1.ReplicaTypeWorker, 0) {
		return true, fmt.Sprintf("TFJob %s/%s succeeded: worker 0 succeeded", job.Namespace, job.Name)
	}
	return false, ""
}
