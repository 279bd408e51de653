package dashboard

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestLogsOfEveryAttempt: the logs page shows a replica's current attempt, with
// "previous attempt" the one before, and the download is the log as a file, as
// tfk8s logs prints it. The logs come from S3: without a kubelet there are no live
// logs here (the e2e tests stream those).
func TestLogsOfEveryAttempt(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	current := "resumed at step 1\n" +
		"Epoch 2/3\n\x1b[1m1875/1875\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m 4s 2ms/step - accuracy: 0.9632 - loss: 0.1237\n" +
		"Epoch 3/3\n\x1b[1m1875/1875\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m 4s 2ms/step - accuracy: 0.9741 - loss: 0.0853\n" +
		"\x1b[33mWARNING\x1b[0m saving the model to /workspace/artifacts/model.keras\n" +
		"done\n"
	finishedJobWithStoredLogs(t, testutil.MakeTFJob("retried", ns).Workers(1).Obj(), "step 1\nKilled\n", current)
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)

	for _, tc := range []struct{ query, want string }{
		{"", "[worker-0] " + strings.ReplaceAll(strings.TrimSuffix(stripANSI(current), "\n"), "\n", "\n[worker-0] ")},
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

	if err := browser.Screenshot(ctx, base+"/jobs/"+ns+"/retried/logs", "#log .line", screenshotPath(t, "dashboard-logs.png")); err != nil {
		t.Error(err)
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

// stripANSI drops the ANSI escape sequences of s, as the page's text shows it.
func stripANSI(s string) string { return regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(s, "") }
