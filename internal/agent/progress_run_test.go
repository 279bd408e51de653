package agent_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfevents"
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
