package agent

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestRecordWritesTheRunsEnd: the record pod's agent writes the end the controller
// passed it as end.json at the run's prefix, where tfk8s runs reads it, with the lead
// replica's progress record (worker-0's, not worker-1's) without its series.
func TestRecordWritesTheRunsEnd(t *testing.T) {
	srv := s3server.Start(t)
	end := tfjob.RunEnd{
		Completed: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC),
		State:     string(tfv1.JobFailed), Reason: "BackoffLimitExceeded", Message: "worker-0 failed 2 times",
		Replicas: map[string]tfv1.ReplicaStatus{"Worker": {Failed: 1}},
	}
	endJSON, err := json.Marshal(end)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		tfjob.EnvArtifactsDestination: "s3://" + srv.Bucket + "/runs",
		tfjob.EnvNamespace:            "ml", tfjob.EnvJobName: "mnist", tfjob.EnvRun: "0f3a9c2e",
		tfjob.EnvRunEnd: string(endJSON),
	}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cfg, err := ParseEndRecordConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	progress := func(step int64, loss tfevents.Value) *tfevents.Progress {
		return &tfevents.Progress{Step: step, Updated: end.Completed, WallTime: end.Completed,
			Scalars: map[string]tfevents.Last{"train/loss": {Step: step, Value: loss, WallTime: end.Completed}},
			Series:  map[string][]tfevents.Point{"train/loss": {{Step: 1, Value: 1}, {Step: step, Value: loss}}}}
	}
	for replica, p := range map[string]*tfevents.Progress{"worker-0": progress(40, 0.25), "worker-1": progress(41, 0.5)} {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		u := cfg.Run.Join(replica+"/", storage.ProgressName)
		if err := srv.Client(t).PutObject(t.Context(), u, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := end
	want.Lead = &tfjob.LeadProgress{Replica: "worker-0", Progress: *progress(40, 0.25)}
	want.Lead.Series = nil
	var logs bytes.Buffer
	if code := RunEndRecord(cfg, &logs); code != 0 {
		t.Fatalf("record exited %d: %s", code, logs.String())
	}
	var buf bytes.Buffer
	if _, err := srv.Client(t).Download(t.Context(), storage.MustParseURI("s3://"+srv.Bucket+"/runs/ml/mnist/0f3a9c2e/end.json"), &buf); err != nil {
		t.Fatal(err)
	}
	var got tfjob.RunEnd
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("end.json (-want +got):\n%s", diff)
	}

	// An environment that does not say which run, or how it ended, is refused.
	delete(env, tfjob.EnvRun)
	env[tfjob.EnvRunEnd] = "{}"
	if _, err := ParseEndRecordConfig(func(k string) string { return env[k] }); err == nil ||
		!strings.Contains(err.Error(), tfjob.EnvRun) || !strings.Contains(err.Error(), "no state") {
		t.Errorf("a bad environment: %v", err)
	}
}
