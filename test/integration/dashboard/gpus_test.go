package dashboard

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestGPUsColumn: the jobs list shows a job's GPUs as allocated/requested — requested
// over every replica, allocated over its pods bound to a node — and "-" for a job
// without GPUs; the job page shows the same and each replica's GPUs.
func TestGPUsColumn(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	job := testutil.MakeTFJob("train", ns).Chief().Workers(2).Obj()
	setGPUs(job, tfv1.ReplicaTypeChief, "1")
	setGPUs(job, tfv1.ReplicaTypeWorker, "2")
	createJob(t, job)
	createJob(t, testutil.MakeTFJob("cpu", ns).Workers(1).Obj())
	waitPods(t, ns, "train", "train-chief-0", "train-worker-0", "train-worker-1")
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)

	row := `tr.job[data-name="train"] td.gpus`
	if err := browser.Open(ctx, base+"/jobs?namespace="+ns, row); err != nil {
		t.Fatal(err)
	}
	if text, err := browser.WaitText(ctx, row, "0/5", wait); err != nil {
		t.Errorf("the jobs list shows GPUs %q before any pod is bound, want 0/5: %v", text, err)
	}
	if text, err := browser.Text(ctx, `tr.job[data-name="cpu"] td.gpus`); err != nil || text != "-" {
		t.Errorf("the jobs list shows GPUs %q for a job without GPUs, want -: %v", text, err)
	}
	// A bound pod holds its GPUs, pending or running; the list follows without a reload.
	kubelet().Bind(t, ns, "train-chief-0", "node-a")
	kubelet().Bind(t, ns, "train-worker-0", "node-b")
	if text, err := browser.WaitText(ctx, row, "3/5", wait); err != nil {
		t.Errorf("the jobs list shows GPUs %q with the chief and one worker bound, want 3/5: %v", text, err)
	}

	if err := browser.Open(ctx, base+"/jobs/"+ns+"/train", "table.replicas"); err != nil {
		t.Fatal(err)
	}
	if text, err := browser.Text(ctx, "#job-gpus"); err != nil || text != "3/5" {
		t.Errorf("the job page shows GPUs %q, want 3/5: %v", text, err)
	}
	replicas, err := browser.Text(ctx, "table.replicas")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"chief-0\ttrain-chief-0\tPending\tnode-a\t1\t", "worker-1\ttrain-worker-1\tPending\t-\t2\t"} {
		if !strings.Contains(replicas, want) {
			t.Errorf("the job page's replicas lack %q:\n%s", want, replicas)
		}
	}
}

// setGPUs has every replica of type rt ask for n GPUs.
func setGPUs(job *tfv1.TFJob, rt tfv1.ReplicaType, n string) {
	c := &job.Spec.TFReplicaSpecs[rt].Template.Spec.Containers[0]
	c.Resources.Limits = corev1.ResourceList{tfjob.GPUResource: resource.MustParse(n)}
}
