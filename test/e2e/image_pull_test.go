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
	follow, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	r := c.tfk8s(follow, "logs", "nopull", "-f")
	if want := "worker-0: container tensorflow is waiting: "; !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, missingImage) {
		t.Errorf("logs nopull -f printed no %q naming %s: %s", want, missingImage, r)
	}
	t.Logf("logs nopull -f, stopped after 20 s, printed on stderr:\n%s", r.stderr)
}
