package dashboard

import (
	"io"
	"net/http"
	"testing"

	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testutil"
)

// TestLogsOfEveryAttempt: the logs page shows a replica's current attempt, with
// "previous attempt" the one before, and the download is the log as a file, as
// tfk8s logs prints it. The logs come from S3: without a kubelet there are no live
// logs here (the e2e tests stream those).
func TestLogsOfEveryAttempt(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	finishedJobWithStoredLogs(t, testutil.MakeTFJob("retried", ns).Workers(1).Obj(), "step 1\nKilled\n", "resumed at step 1\ndone\n")
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)

	for _, tc := range []struct{ query, want string }{
		{"", "[worker-0] resumed at step 1\n[worker-0] done"},
		{"?replica=worker-0&previous=1", "[worker-0] step 1\n[worker-0] Killed"},
	} {
		if err := browser.Open(ctx, base+"/jobs/"+ns+"/retried/logs"+tc.query, "#log"); err != nil {
			t.Fatal(err)
		}
		if status, err := browser.WaitText(ctx, "#log-status", "End of the log", wait); err != nil {
			t.Fatalf("logs%s: the stream did not end: %v (status %q)", tc.query, err, status)
		}
		if text, err := browser.Text(ctx, "#log"); err != nil || text != tc.want {
			t.Errorf("logs%s show %q (%v), want %q", tc.query, text, err, tc.want)
		}
	}

	resp, err := http.Get(base + "/jobs/" + ns + "/retried/logs/download?replica=worker-0&previous=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if want := "[worker-0] step 1\n[worker-0] Killed\n"; string(body) != want {
		t.Errorf("the download is %q, want %q", body, want)
	}
	if cd := resp.Header.Get("Content-Disposition"); cd != "attachment; filename=retried-worker-0-previous.log" {
		t.Errorf("the download's Content-Disposition is %q", cd)
	}
}
