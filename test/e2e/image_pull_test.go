package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

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
