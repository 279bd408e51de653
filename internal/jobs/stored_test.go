package jobs

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// TestIndexLogsAndPick: the logs of each replica are found by attempt in a listing of
// the job's prefix, and each choice of attempt prints the right one or says what
// there is.
func TestIndexLogsAndPick(t *testing.T) {
	base := storage.MustParseURI("s3://bkt/runs/team/mnist/")
	var objs []storage.Object
	for _, key := range []string{
		"worker-0/attempts/1/attempt.json",
		"worker-0/attempts/1/logs/tensorflow.log",
		"worker-0/attempts/2/logs/sidecar.log",
		"worker-0/attempts/2/logs/tensorflow.log",
		"worker-0/attempts/10/logs/tensorflow.log",
		"worker-0/artifacts/workspace/logs/events.log",
		"worker-0/manifest.json",
		"worker-1/attempts/1/logs/tensorflow.log",
		"ps-0/logs/tensorflow.log", // stored by an agent that kept one log
	} {
		objs = append(objs, storage.Object{URI: base.Join(key)})
	}
	logs := indexLogs(base, objs)
	cases := []struct {
		replica string
		which   Attempt
		want    string // the key under base, or the error
	}{
		{"worker-0", Attempt{}, "worker-0/attempts/10/logs/tensorflow.log"},
		{"worker-0", Attempt{Previous: true}, "worker-0/attempts/2/logs/tensorflow.log"},
		{"worker-0", Attempt{Number: 1}, "worker-0/attempts/1/logs/tensorflow.log"},
		{"worker-0", Attempt{Number: 3}, "--attempt 3: replica worker-0 has no attempt 3: S3 holds attempts 1, 2, 10"},
		{"worker-1", Attempt{}, "worker-1/attempts/1/logs/tensorflow.log"},
		{"worker-1", Attempt{Previous: true}, "--previous: replica worker-1 has no attempt before its current one: S3 holds attempts 1"},
		{"ps-0", Attempt{}, "ps-0/logs/tensorflow.log"},
		{"ps-0", Attempt{Number: 1}, "--attempt 1: replica ps-0 has no attempt 1: S3 holds no attempt of it"},
	}
	for _, tc := range cases {
		u, err := logs[tc.replica].pick(tc.replica, tc.which)
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.As(err, new(*missingAttemptError)) {
				t.Errorf("%s %+v: error %v is no missingAttemptError", tc.replica, tc.which, err)
			}
		} else {
			got = u.Key[len(base.Key):]
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %+v (-want +got):\n%s", tc.replica, tc.which, diff)
		}
	}
	if _, err := (&storedLogs{}).pick("chief-0", Attempt{}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a replica with no logs: %v, want ErrNotFound", err)
	}
}
