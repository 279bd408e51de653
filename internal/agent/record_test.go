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
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestRecordWritesTheRunsEnd: the record pod's agent writes the end the controller
// passed it as end.json at the run's prefix, where tfk8s runs reads it.
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
	cfg, err := ParseRecordConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	if code := RunRecord(cfg, &logs); code != 0 {
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
	if diff := cmp.Diff(end, got); diff != "" {
		t.Errorf("end.json (-want +got):\n%s", diff)
	}

	// An environment that does not say which run, or how it ended, is refused.
	delete(env, tfjob.EnvRun)
	env[tfjob.EnvRunEnd] = "{}"
	if _, err := ParseRecordConfig(func(k string) string { return env[k] }); err == nil ||
		!strings.Contains(err.Error(), tfjob.EnvRun) || !strings.Contains(err.Error(), "no state") {
		t.Errorf("a bad environment: %v", err)
	}
}
