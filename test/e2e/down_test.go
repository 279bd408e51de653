package e2e

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfk8s/tfk8s/internal/localcluster"
)

// lastWordsScript runs until SIGTERM, then writes an artifact and a last log line:
// what `tfk8s local down` must not lose.
const lastWordsScript = `import os, signal, sys, time
def stop(*_):
    os.makedirs("/workspace/out", exist_ok=True)
    with open("/workspace/out/final.txt", "w") as f:
        f.write("written at SIGTERM\n")
    print("goodbye at SIGTERM", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("running", flush=True)
while True:
    time.sleep(0.1)
`

// testDownKeepsFinalUploads: a job still running when the cluster is brought down
// gets SIGTERM while S3 still serves, and its agent's final upload lands: after down,
// the artifact written at SIGTERM and the log line printed then are in S3's data
// directory.
func testDownKeepsFinalUploads(ctx context.Context, t *testing.T, c *jobsCluster, opts localcluster.Options) {
	c.mustTfk8s(ctx, t, "submit", "../../examples/trainer", "--name", "last", "--image", jobsImage,
		"--workers", "0", "--chief", "--artifacts", "out", "--", "python3", "-c", lastWordsScript)
	if err := c.waitAllRunning(ctx, "last", 1, 100*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	chief := c.pod(ctx, t, "last", "chief", 0)
	// The program's own "running" line, not the agent's quote of the script, which
	// comes before the program has set its SIGTERM handler.
	printed := regexp.MustCompile(`(?m)^running$`)
	c.eventually(ctx, t, "the job's program runs", func() (bool, error) {
		logs, err := c.cs.CoreV1().Pods(chief.Namespace).GetLogs(chief.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		return err == nil && printed.Match(logs), err
	})
	if err := localcluster.Down(ctx, opts); err != nil {
		t.Fatalf("down: %v", err)
	}
	// The agent's log quotes the script, so each line counts only at a line's end. The
	// chief stores under the job's run, last/<run>/chief-0/.
	chiefFiles := regexp.MustCompile(`/last/[0-9a-f]{8}/chief-0/`)
	found := map[string]string{}
	_ = filepath.WalkDir(filepath.Join(opts.Dir, "s3", localcluster.Bucket), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !chiefFiles.MatchString(path) {
			return nil
		}
		data, _ := os.ReadFile(path)
		switch {
		case strings.HasSuffix(path, "/artifacts/workspace/out/final.txt") && string(data) == "written at SIGTERM\n":
			found["artifact"] = path
		case strings.HasSuffix(path, ".log") && regexp.MustCompile(`(?m)goodbye at SIGTERM$`).Match(data):
			found["log"] = path
		}
		return nil
	})
	t.Logf("in S3 after down: %v", found)
	if len(found) != 2 {
		t.Errorf("after down, S3 holds %v; want the artifact written and the log line printed at SIGTERM", found)
	}
}
