package api

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// patchCase is a merge patch of a job by one user, and the refusal it must meet.
type patchCase struct {
	name  string
	as    client.Client
	job   string
	patch string
	// wantField and wantMsg must both appear in the refusal; "" for none.
	wantField, wantMsg string
}

// checkPatches applies each case's patch (dry run) and checks the answer.
func checkPatches(t *testing.T, ns string, cases []patchCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &tfv1.TFJob{}
			job.Namespace, job.Name = ns, tc.job
			err := tc.as.Patch(context.Background(), job, client.RawPatch(types.MergePatchType, []byte(tc.patch)), client.DryRunAll)
			switch {
			case tc.wantField == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantField != "" && (err == nil || !strings.Contains(err.Error(), tc.wantField+": ") || !strings.Contains(err.Error(), tc.wantMsg)):
				t.Errorf("got %v; want a refusal naming %s: %s", err, tc.wantField, tc.wantMsg)
			}
		})
	}
}

// TestNotebookUpdatesOthersJobs: the notebooks' policy checks updates too. On vjob,
// another user's job, a notebook's account may suspend and resume, but may not give it
// a TensorBoard (issue 37: the attacker's image reading vjob's S3 Secret) nor change a
// tfk8s.io/ label or annotation; on its own job it may. A priority class is refused on
// update as on create. A job an admin created with host access may still be suspended
// by the notebook. Nobody may change a job's recorded creator.
func TestNotebookUpdatesOthersJobs(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	ctx := context.Background()
	nb := notebookAccount(t, ns, "nb", true)
	waitNotebookPolicy(t, nb, ns)

	vjob := notebookJob(ns, "vjob")
	vjob.Annotations[tfv1.AnnotationCreator] = "victim"
	own := notebookJob(ns, "own")
	onHost := testutil.MakeTFJob("onhost", ns).Workers(1).HostNetwork().Obj()
	for _, j := range []*tfv1.TFJob{vjob, onHost} {
		if err := k8sClient.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := nb.Create(ctx, own); err != nil {
		t.Fatalf("the notebook's own job: %v", err)
	}

	tensorboard := `{"spec":{"tensorboard":{"enabled":true,"image":"attacker/tb","logDir":"s3://bucket/"}}}`
	who := "system:serviceaccount:" + ns + ":nb"
	cases := []patchCase{
		{name: "suspend another's job", as: nb, job: "vjob", patch: `{"spec":{"runPolicy":{"suspend":true}}}`},
		{name: "suspend an admin's job on the host", as: nb, job: "onhost", patch: `{"spec":{"runPolicy":{"suspend":true}}}`},
		{name: "TensorBoard on its own job", as: nb, job: "own", patch: tensorboard},
		{name: "a tfk8s.io label on its own job", as: nb, job: "own", patch: `{"metadata":{"labels":{"tfk8s.io/x":"y"}}}`},
		{name: "a label of its own on another's job", as: nb, job: "vjob", patch: `{"metadata":{"labels":{"team":"a"}}}`},
		{name: "TensorBoard on another's job", as: nb, job: "vjob", patch: tensorboard,
			wantField: "spec.tensorboard", wantMsg: who + " may not change this on a job victim created"},
		{name: "a tfk8s.io label on another's job", as: nb, job: "vjob", patch: `{"metadata":{"labels":{"tfk8s.io/notebook":"nb"}}}`,
			wantField: "metadata.labels[tfk8s.io/notebook]", wantMsg: "may not change this on a job victim created"},
		{name: "a tfk8s.io annotation on an admin's job", as: nb, job: "onhost", patch: `{"metadata":{"annotations":{"tfk8s.io/tensorboard-requested-at":"2026-01-01T00:00:00Z"}}}`,
			wantField: "metadata.annotations[tfk8s.io/tensorboard-requested-at]", wantMsg: "on a job with no recorded creator"},
		{name: "a priority class on its own job", as: nb, job: "own", patch: `{"spec":{"runPolicy":{"schedulingPolicy":{"priorityClass":"high"}}}}`,
			wantField: "spec.runPolicy.schedulingPolicy.priorityClass", wantMsg: "may not choose its node, runtime or priority"},
		{name: "the creator of its own job, by the notebook", as: nb, job: "own", patch: `{"metadata":{"annotations":{"tfk8s.io/creator":"victim"}}}`,
			wantField: "metadata.annotations[tfk8s.io/creator]", wantMsg: "the creator is recorded when the job is created and never changes"},
		// Both policies refuse it; the API server names whichever it ran first.
		{name: "the creator of another's job, by the notebook", as: nb, job: "vjob", patch: `{"metadata":{"annotations":{"tfk8s.io/creator":"` + who + `"}}}`,
			wantField: "metadata.annotations[tfk8s.io/creator]"},
		{name: "the creator, by an admin", as: k8sClient, job: "vjob", patch: `{"metadata":{"annotations":{"tfk8s.io/creator":null}}}`,
			wantField: "metadata.annotations[tfk8s.io/creator]", wantMsg: "never changes"},
		{name: "TensorBoard on another's job, by an admin", as: k8sClient, job: "vjob", patch: tensorboard},
	}
	checkPatches(t, ns, cases)
}

// TestKueueQueueHeld: the queue label of a job Kueue holds (suspended) may be neither
// removed nor changed, by anyone: without it the job leaves Kueue and may be resumed
// without admission. Once the job runs, or on a job without a queue, labels are free.
func TestKueueQueueHeld(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	ctx := context.Background()
	held := testutil.MakeTFJob("held", ns).Workers(1).Suspend(true).Obj()
	running := testutil.MakeTFJob("running", ns).Workers(1).Obj()
	free := testutil.MakeTFJob("free", ns).Workers(1).Suspend(true).Obj()
	for _, j := range []*tfv1.TFJob{held, running} {
		j.Labels = map[string]string{tfv1.LabelKueueQueue: "team-queue"}
	}
	for _, j := range []*tfv1.TFJob{held, running, free} {
		if err := k8sClient.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	msg := "the job is held by Kueue in queue team-queue: its queue may not be removed or changed while it is suspended"
	cases := []patchCase{
		{name: "remove, held", as: k8sClient, job: "held", patch: `{"metadata":{"labels":{"kueue.x-k8s.io/queue-name":null}}}`,
			wantField: "metadata.labels[kueue.x-k8s.io/queue-name]", wantMsg: msg},
		{name: "remove and resume at once", as: k8sClient, job: "held", patch: `{"metadata":{"labels":{"kueue.x-k8s.io/queue-name":null}},"spec":{"runPolicy":{"suspend":false}}}`,
			wantField: "metadata.labels[kueue.x-k8s.io/queue-name]", wantMsg: msg},
		{name: "change, held", as: k8sClient, job: "held", patch: `{"metadata":{"labels":{"kueue.x-k8s.io/queue-name":"other"}}}`,
			wantField: "metadata.labels[kueue.x-k8s.io/queue-name]", wantMsg: msg},
		{name: "another label, held", as: k8sClient, job: "held", patch: `{"metadata":{"labels":{"team":"a"}}}`},
		{name: "remove, running", as: k8sClient, job: "running", patch: `{"metadata":{"labels":{"kueue.x-k8s.io/queue-name":null}}}`},
		{name: "add, held without a queue", as: k8sClient, job: "free", patch: `{"metadata":{"labels":{"kueue.x-k8s.io/queue-name":"team-queue"}}}`},
	}
	checkPatches(t, ns, cases)
}
