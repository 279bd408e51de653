package controller

import (
	"fmt"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
	"k8s.io/utils/ptr"
)

// agentPodRefusal names the replica template, if any, that shares its process
// namespace in a job whose pods are about to get the agent. Its other containers could
// then read the agent's environment, storage keys included, before the agent erases
// it; admission cannot tell, since only the controller knows it injects the agent.
func agentPodRefusal(job *tfv1.TFJob, sp *startPlan) string {
	if len(sp.missing) == 0 || !tfjob.UsesStorage(job) {
		return ""
	}
	for _, rt := range tfv1.ReplicaTypes {
		spec := job.Spec.TFReplicaSpecs[rt]
		if spec != nil && ptr.Deref(spec.Template.Spec.ShareProcessNamespace, false) {
			return fmt.Sprintf("spec.tfReplicaSpecs.%s.template.spec.shareProcessNamespace is true: "+
				"its containers could read the environment of tfk8s's agent, storage credentials included, "+
				"so no pod is created; remove the field, or run the job without code, data and artifacts", rt)
		}
	}
	return ""
}
