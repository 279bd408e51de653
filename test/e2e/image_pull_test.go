package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// testImagePull submits a job whose image cannot be pulled, waits (c.wait at most) for
// the kubelet to back off, and checks that tfk8s describe shows the line
// docs/troubleshooting.md shows for it: the container, ImagePullBackOff and the image;
// and that tfk8s logs -f says so too. The image is under the cluster's own registry
// (host:port), which answers not found itself: no registry on the internet is asked,
// so the kubelet's message is the same offline.
func testImagePull(ctx context.Context, t *testing.T, c *jobsCluster, registry string) {
	missingImage := registry + "/tfk8s/no-such-image:0.0.0"
	c.mustTfk8s(ctx, t, "submit", "--name", "nopull", "--image", missingImage, "--workers", "1",
		"--", "python3", "-c", "print('never runs')")
	defer c.tfk8s(ctx, "delete", "nopull")
	var out string
	c.eventually(ctx, t, "describe nopull to show ImagePullBackOff", func() (bool, error) {
		r := c.tfk8s(ctx, "describe", "nopull")
		out = r.stdout
		return r.code == 0 && strings.Contains(out, ": ImagePullBackOff: "), nil
	})
	testutil.CheckAsTroubleshootingSays(t, "image-pull", out)
	if !strings.Contains(out, missingImage) {
		t.Errorf("describe nopull names no image %s:\n%s", missingImage, out)
	}
	t.Logf("describe nopull:\n%s", out)
	checkJobSaysWaiting(ctx, t, c, missingImage)

	// logs -f, which submit --follow runs, says why the replica waits rather than
	// staying silent; it follows until the job ends, which this one never does.
	// It stops at the first line that says so, 20 s at most.
	want := "worker-0: container tensorflow is waiting: "
	follow, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	said := &cancelWhen{cancel: cancel, done: func(s string) bool {
		return strings.Contains(s, want) && strings.Contains(s, missingImage)
	}}
	start := time.Now()
	r := c.tfk8sErrTo(follow, said, "logs", "nopull", "-f")
	if !said.done(r.stderr) {
		t.Errorf("logs nopull -f printed no %q naming %s: %s", want, missingImage, r)
	}
	t.Logf("logs nopull -f, stopped after %s, printed on stderr:\n%s", time.Since(start).Round(time.Millisecond), r.stderr)
}

// checkJobSaysWaiting checks that the job itself says why it waits, where kubectl and
// the Kubeflow SDK read it: its ReplicasWaiting condition names worker 0 and the image,
// its state stays Created, tfk8s list shows the reason beside it, and describe's events
// hold one ImageNotPulled warning, about worker 0's pod, emitted once.
func checkJobSaysWaiting(ctx context.Context, t *testing.T, c *jobsCluster, image string) {
	var row, out string
	c.eventually(ctx, t, "list to show nopull waiting and describe its event", func() (bool, error) {
		row = listRow(c.tfk8s(ctx, "list").stdout, "nopull")
		out = c.tfk8s(ctx, "describe", "nopull").stdout
		return strings.Contains(row, "Created ("+tfv1.ReasonImageNotPulled+")") &&
			strings.Contains(out, "Warning   "+tfv1.ReasonImageNotPulled), nil
	})
	job := c.job(ctx, t, "nopull")
	cond := meta.FindStatusCondition(job.Status.Conditions, string(tfv1.JobReplicasWaiting))
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != tfv1.ReasonImageNotPulled ||
		cond.Message != "worker 0 cannot pull image "+image {
		t.Errorf("ReplicasWaiting %+v; want True, %s, naming worker 0 and %s", cond, tfv1.ReasonImageNotPulled, image)
	}
	if job.Status.State != tfv1.JobCreated {
		t.Errorf("state %s, want %s: a job waiting on its image is no failure", job.Status.State, tfv1.JobCreated)
	}
	if n := strings.Count(out, "Warning   "+tfv1.ReasonImageNotPulled); n != 1 {
		t.Errorf("describe shows %d %s events, want 1 whatever the kubelet's turns:\n%s", n, tfv1.ReasonImageNotPulled, out)
	}
	checkEmittedOnce(ctx, t, c, job, tfv1.ReasonImageNotPulled, "nopull-worker-0")
	t.Logf("list: %s", row)
}

// listRow is the line of tfk8s list's table for the job name, "" if none.
func listRow(table, name string) string {
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, name+" ") {
			return line
		}
	}
	return ""
}

// cancelWhen calls cancel once what was written to it, all told, is done.
type cancelWhen struct {
	buf    testutil.SyncBuffer
	done   func(string) bool
	cancel context.CancelFunc
}

func (w *cancelWhen) Write(p []byte) (int, error) {
	n, err := w.buf.Write(p)
	if w.done(w.buf.String()) {
		w.cancel()
	}
	return n, err
}

// checkEmittedOnce checks that the job has one event of reason, related to the pod, and
// that it was emitted once: the events recorder folds a second emission of the same
// event into a series on it, which describe would show only as a count.
func checkEmittedOnce(ctx context.Context, t *testing.T, c *jobsCluster, job *tfv1.TFJob, reason, pod string) {
	list, err := c.cs.EventsV1().Events(job.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var got []string
	for _, e := range list.Items {
		if e.Regarding.UID != job.UID || e.Reason != reason {
			continue
		}
		related := ""
		if e.Related != nil {
			related = e.Related.Name
		}
		got = append(got, related)
		if e.Series != nil {
			t.Errorf("%s event about %s emitted %d times, want once whatever the kubelet's turns", reason, related, e.Series.Count)
		}
	}
	if len(got) != 1 || got[0] != pod {
		t.Errorf("%s events related to %v, want one related to %s", reason, got, pod)
	}
}
