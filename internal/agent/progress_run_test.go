package agent_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func TestRunStoresTheProgressOfItsSummaries(t *testing.T) {
	j := newBareJob(t)
	files, err := filepath.Glob(filepath.Join("..", "tfevents", "testdata", "fit", "*", "events.out.tfevents.*"))
	if err != nil || len(files) != 2 {
		t.Fatalf("testdata event files: %v, %v", files, err)
	}
	// The trainer writes Keras' summaries of its train and validation runs.
	script := `set -e; for f in "$@"; do run=$(basename $(dirname "$f")); mkdir -p "$MODEL/logs/$run"; cp "$f" "$MODEL/logs/$run/"; done`
	if code := j.run(t, []string{"MODEL=" + j.path("model")}, append([]string{"sh", "-c", script, "sh"}, files...)...); code != 0 {
		t.Fatalf("agent exited %d; stderr:\n%s", code, j.stderr.String())
	}
	var p tfevents.Progress
	if err := json.Unmarshal([]byte(download(t, j.client, j.replicaURI(storage.ProgressName))), &p); err != nil {
		t.Fatal(err)
	}
	key, last, ok := p.Loss()
	if p.Step != 12 || !ok || key != "logs/train/epoch_loss" || last.Step != 2 || p.Updated.IsZero() {
		t.Errorf("progress: step %d, main scalar %s %+v, updated %v; want step 12, logs/train/epoch_loss at step 2", p.Step, key, last, p.Updated)
	}
	if _, ok := p.Scalars["logs/validation/evaluation_loss_vs_iterations"]; !ok {
		t.Errorf("scalars %v lack logs/validation/evaluation_loss_vs_iterations", p.Scalars)
	}
}

func TestRunServesItsProgressToItsPodUIDAlone(t *testing.T) {
	j := newBareJob(t)
	files, err := filepath.Glob(filepath.Join("..", "tfevents", "testdata", "fit", "*", "events.out.tfevents.*"))
	if err != nil || len(files) != 2 {
		t.Fatalf("testdata event files: %v, %v", files, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// The trainer writes its summaries, then trains on until the test has seen them.
	script := `set -e; for f in "$@"; do run=$(basename $(dirname "$f")); mkdir -p "$MODEL/logs/$run"; cp "$f" "$MODEL/logs/$run/"; done
for i in $(seq 600); do [ -e "$MODEL/stop" ] && exit 0; sleep 0.1; done; exit 3`
	j.start(t, []string{"MODEL=" + j.path("model"), tfjob.EnvProgressPort + "=" + strconv.Itoa(port),
		tfjob.EnvPodUID + "=uid-1", tfjob.EnvTotalSteps + "=40", tfjob.EnvArtifactsInterval + "=200ms"}, append([]string{"sh", "-c", script, "sh"}, files...)...)
	url := fmt.Sprintf("http://127.0.0.1:%d%s", port, tfjob.ProgressPath)
	get := func(token string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	var got tfjob.LiveProgress
	eventually(t, 30*time.Second, "the agent serving step 12", func() bool {
		code, b := get("uid-1")
		return code == http.StatusOK && json.Unmarshal(b, &got) == nil && got.Step == 12
	})
	// Keras' summaries of fit/: the loss first, the total from the environment.
	if got.TotalSteps != 40 || len(got.Metrics) == 0 || got.Metrics[0].Name != "logs/train/epoch_loss" {
		t.Errorf("served %+v; want total 40 and logs/train/epoch_loss first", got)
	}
	for _, token := range []string{"", "uid-2"} {
		if code, _ := get(token); code != http.StatusUnauthorized {
			t.Errorf("bearer %q: status %d, want 401", token, code)
		}
	}
	testutil.WriteFile(t, j.path("model", "stop"), "")
	if code := j.wait(t, time.Minute); code != 0 {
		t.Fatalf("agent exited %d; stderr:\n%s", code, j.stderr.String())
	}
}
