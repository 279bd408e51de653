package dashboard

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// storeArtifact uploads a file as the agent of job's worker-0 backs up the
// container's path p.
func storeArtifact(t *testing.T, srv *s3server.Server, ns, job, p, content string) {
	t.Helper()
	prefix := storage.ReplicaPrefix(storage.URI{Bucket: srv.Bucket, Key: "runs/"}, ns, job, "worker-0")
	if err := srv.Client(t).PutObject(context.Background(), storage.ArtifactURI(prefix, p), strings.NewReader(content), int64(len(content)), storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
}

// get fetches url and returns its status, Content-Disposition and body.
func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Disposition"), string(body)
}

// TestArtifactsListAndDownload: the artifacts page lists a job's stored files by
// replica, from the S3 server its storage Secret names; a file downloads as an
// attachment with its content; a path outside the job's files is refused.
func TestArtifactsListAndDownload(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	job := testutil.MakeTFJob("trained", ns).Workers(1).Obj()
	srv := finishedJobWithStoredLogs(t, job, "epoch 1\n")
	storeArtifact(t, srv, ns, "trained", "/workspace/model/weights.bin", "0123456789")
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)

	if err := browser.Open(ctx, base+"/jobs/"+ns+"/trained", "#artifacts-link"); err != nil {
		t.Fatal(err)
	}
	if err := browser.Open(ctx, base+"/jobs/"+ns+"/trained/artifacts", "#artifacts"); err != nil {
		t.Fatal(err)
	}
	paths, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("tr.artifact td.path")].map(e => e.innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"worker-0/artifacts/workspace/model/weights.bin", "worker-0/attempts/1/logs/tensorflow.log"}
	if d := cmp.Diff(want, paths); d != "" {
		t.Errorf("the artifacts page's files (-want +got):\n%s", d)
	}

	for _, tc := range []struct {
		path, disposition, body string
		code                    int
	}{
		{"worker-0/artifacts/workspace/model/weights.bin", "attachment; filename=trained-weights.bin", "0123456789", http.StatusOK},
		{"worker-0/attempts/1/logs/tensorflow.log", "attachment; filename=trained-tensorflow.log", "epoch 1\n", http.StatusOK},
		{"worker-0/artifacts/missing", "", "", http.StatusNotFound},
		{"../other/worker-0/manifest.json", "", "", http.StatusBadRequest},
	} {
		code, cd, body := get(t, base+"/jobs/"+ns+"/trained/artifacts/download?path="+tc.path)
		if code != tc.code || cd != tc.disposition || (code == http.StatusOK && body != tc.body) {
			t.Errorf("download %s: %d %q %.80q, want %d %q %q", tc.path, code, cd, body, tc.code, tc.disposition, tc.body)
		}
	}
	if err := browser.Screenshot(ctx, base+"/jobs/"+ns+"/trained/artifacts", "tr.artifact", screenshotPath(t, "dashboard-artifacts.png")); err != nil {
		t.Error(err)
	}
}

// TestInClusterNothingOfAnotherNamespace: in-cluster, a user of namespace a gets 403
// and nothing of b: the files of b's job, listed or downloaded, b's workspace, a
// clone of b's job; a job submitted to b is refused and not created. Their own
// job's files are listed.
func TestInClusterNothingOfAnotherNamespace(t *testing.T) {
	nsA, nsB := testutil.Namespace(t, k8sClient), testutil.Namespace(t, k8sClient)
	srvA := finishedJobWithStoredLogs(t, testutil.MakeTFJob("job-of-a", nsA).Workers(1).Obj(), "a's log\n")
	srvB := finishedJobWithStoredLogs(t, testutil.MakeTFJob("job-of-b", nsB).Workers(1).Obj(), "b's log\n")
	storeArtifact(t, srvB, nsB, "job-of-b", "/workspace/secret-model.bin", "b's weights")
	alice := userWithRole(t, nsA, "alice")
	// The dashboard's own environment names b's S3 server: it must not be used. Both
	// servers are endpoints the admin allows.
	base, _ := startDashboardWithEnv(t, "default", srvB.Env(), "--in-cluster",
		"--allowed-s3-endpoint", srvA.Endpoint, "--allowed-s3-endpoint", srvB.Endpoint)
	ctx := browser.Start(t)
	signIn(t, ctx, base, alice)

	if code, text := status(t, ctx, base+"/jobs/"+nsA+"/job-of-a/artifacts"); code != http.StatusOK || !strings.Contains(text, "worker-0/attempts/1/logs/tensorflow.log") {
		t.Errorf("alice's own artifacts: %d %q", code, text)
	}
	for _, path := range []string{
		"/jobs/" + nsB + "/job-of-b/artifacts",
		"/jobs/" + nsB + "/job-of-b/artifacts/download?path=worker-0/artifacts/workspace/secret-model.bin",
		"/workspace?namespace=" + nsB,
		"/submit?namespace=" + nsB + "&clone=job-of-b",
	} {
		code, text := status(t, ctx, base+path)
		if code != http.StatusForbidden || !strings.Contains(text, "forbidden") || strings.Contains(text, "weights") || strings.Contains(text, "secret-model") {
			t.Errorf("alice GET %s: %d %q, want 403 forbidden and nothing of b", path, code, text)
		}
	}
	if err := browser.Open(ctx, base+"/submit?namespace="+nsB, "#name"); err != nil {
		t.Fatal(err)
	}
	fillForm(t, ctx, map[string]string{"name": "intruder", "image": "busybox"})
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("create"))); err != nil {
		t.Fatal(err)
	}
	if text, err := browser.WaitText(ctx, "body", "forbidden", wait); err != nil {
		t.Errorf("a job submitted to b: %v (%q)", err, text)
	}
	if !jobAbsent(t, nsB, "intruder") {
		t.Error("alice created a job in b")
	}
}
