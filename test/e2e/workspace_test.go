package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfk8s/tfk8s/internal/images"
)

// volumeProgram is the program of the volumes job's two workers: worker 1 checks that
// the read-only volume refuses writes, then writes a file into the data volume;
// worker 0 waits for the file and prints what it holds. The job succeeds with worker 0,
// maybe before worker 1 has exited: its pod is kept (--clean-pod-policy None), so
// that its log, already whole, is read.
const volumeProgram = `
import json, os, pathlib, sys, time
index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
shared = pathlib.Path("/data/hello.txt")
if index == 1:
    try:
        pathlib.Path("/reference/x").write_text("x")
        print("[worker 1] wrote into the read-only volume", flush=True)
        sys.exit(1)
    except OSError as e:
        print(f"[worker 1] the read-only volume refused a write: {e.strerror}", flush=True)
    shared.write_text("written by worker 1")
    sys.exit(0)
for _ in range(600):
    if shared.exists():
        break
    time.sleep(0.1)
print(f"[worker 0] read: {shared.read_text()}", flush=True)
`

// testVolumes: a job's volume, provisioned by local mode's provisioner, is shared by
// its replicas (one writes, the other reads); a read-only volume refuses writes; the
// claim goes with the job; bad volumes are refused before anything is created.
func testVolumes(ctx context.Context, t *testing.T, c *jobsCluster) {
	c.mustTfk8s(ctx, t, "submit", "--name", "vol", "--image", images.Python, "--workers", "2", "--clean-pod-policy", "None",
		"--volume", "name=data,size=1Gi,mount=/data",
		"--volume", "name=reference,size=1Gi,mount=/reference,readOnly",
		"--", "python3", "-c", volumeProgram)
	_, logs := waitSucceeded(ctx, t, c, "vol")
	for _, want := range []string{
		"[worker 0] read: written by worker 1",
		"[worker 1] the read-only volume refused a write: Read-only file system",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the job's logs lack %q:\n%s", want, logs)
		}
	}
	describe := c.mustTfk8s(ctx, t, "describe", "vol").stdout
	if !strings.Contains(describe, "data at /data (read-write), claim vol-data, 1Gi, default class, deleted with the job") {
		t.Errorf("describe vol does not show the data volume:\n%s", describe)
	}
	claim, err := c.cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "vol-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status.Phase != corev1.ClaimBound {
		t.Errorf("claim vol-data is %s, want Bound", claim.Status.Phase)
	}
	c.mustTfk8s(ctx, t, "delete", "vol", "--wait")
	c.eventually(ctx, t, "the claims of vol deleted with it", func() (bool, error) {
		_, err := c.cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "vol-data", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	for _, tc := range []struct {
		volume, want string
	}{
		{"name=data,size=1Gi,mount=/data,storageClass=no-such-class", `spec.volumes[0] (data): storage class "no-such-class" does not exist (the cluster has tfk8s-local)`},
		{"name=data,size=ten,mount=/data", `--volume "name=data,size=ten,mount=/data": size "ten": not a quantity`},
		{"name=data,size=1Gi,mount=/tfk8s", "spec.volumes: Invalid value: a volume's mountPath may not be /tfk8s or under it"},
	} {
		r := c.tfk8s(ctx, "submit", "--name", "badvol", "--image", images.Python, "--volume", tc.volume, "--", "true")
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("submit --volume %s: %s\nwant a failure saying %q", tc.volume, r, tc.want)
		}
	}
	if r := c.tfk8s(ctx, "get", "badvol"); r.code == 0 {
		t.Errorf("a refused job exists: %s", r)
	}
}
