package controller

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/fixtures"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestAgentPodRefusal checks that a job whose pods would run the agent beside
// containers sharing its process namespace is refused, naming the field, and that
// the field alone, without the agent, is left to admission.
func TestAgentPodRefusal(t *testing.T) {
	shared := func(job *tfv1.TFJob) *tfv1.TFJob {
		job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.ShareProcessNamespace = ptr.To(true)
		return job
	}
	missing := &startPlan{missing: []ReplicaKey{{Type: tfv1.ReplicaTypeWorker, Index: 0}}}
	cases := []struct {
		name string
		job  *tfv1.TFJob
		sp   *startPlan
		want string
	}{
		{name: "agent job sharing its process namespace", job: shared(fixtures.AgentJob()), sp: missing,
			want: "spec.tfReplicaSpecs.Worker.template.spec.shareProcessNamespace is true"},
		{name: "agent job, processes apart", job: fixtures.AgentJob(), sp: missing},
		{name: "shared, but no agent", job: shared(testutil.MakeTFJob("plain", "ml").Workers(2).Obj()), sp: missing},
		{name: "no pod to create", job: shared(fixtures.AgentJob()), sp: &startPlan{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := agentPodRefusal(tc.job, tc.sp)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("agentPodRefusal = %q, want one containing %q", got, tc.want)
			}
		})
	}
}
