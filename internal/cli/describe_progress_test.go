package cli

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

func TestDescribeProgress(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	job := tfJob("mnist", "team", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeChief: {}})
	job.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://bkt/runs", Interval: &metav1.Duration{Duration: 30 * time.Second}}
	progress := &jobs.JobProgress{Replica: "chief-0", Progress: &tfevents.Progress{
		Step: 240, Updated: now.Add(-12 * time.Second),
		Scalars: map[string]tfevents.Last{
			"logs/train/epoch_loss":      {Step: 11, Value: 0.123456789},
			"logs/validation/epoch_loss": {Step: 11, Value: tfevents.Value(math.NaN())},
		},
	}}
	many := &jobs.JobProgress{Replica: "worker-0", Progress: &tfevents.Progress{Step: 3, Updated: now, Scalars: map[string]tfevents.Last{}, Omitted: 4}}
	for i := range maxDescribedScalars + 1 {
		many.Scalars[fmt.Sprintf("m%02d", i)] = tfevents.Last{Step: 3, Value: 1}
	}
	for _, tc := range []struct {
		name     string
		interval *metav1.Duration
		progress *jobs.JobProgress
		err      error
		want     string
	}{{
		name:     "running",
		progress: progress,
		want: "Progress:\n" +
			"  Step:      240 (from chief-0's summaries)\n" +
			"  Loss:      0.123457 (logs/train/epoch_loss at step 11)\n" +
			"  Updated:   12s ago; the agents upload the summaries every 30s: the figures lag training by up to that, plus the trainer's flush\n" +
			"  SCALAR                       STEP   VALUE\n" +
			"  logs/train/epoch_loss        11     0.123457\n" +
			"  logs/validation/epoch_loss   11     NaN\n",
	}, {
		name:     "uploads at the end only",
		interval: &metav1.Duration{},
		progress: progress,
		want:     "  Updated:   12s ago; the agents upload the summaries only as each replica ends\n",
	}, {
		name:     "many scalars",
		progress: many,
		want:     "  m19      3      1\n  … and 5 more\n",
	}, {
		name: "none yet",
		want: "Progress:\n  <none stored yet: no TensorFlow summaries among the artifacts uploaded so far>\n",
	}, {
		name: "unreadable",
		err:  errors.New("reading s3://bkt/runs/team/mnist/chief-0/progress.json: access denied"),
		want: "Progress:\n  <unknown: reading s3://bkt/runs/team/mnist/chief-0/progress.json: access denied>\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			j := job.DeepCopy()
			if tc.interval != nil {
				j.Spec.Artifacts.Interval = tc.interval
			}
			var buf bytes.Buffer
			if err := describeProgress(&buf, j, tc.progress, tc.err, now); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); !bytes.Contains(buf.Bytes(), []byte(tc.want)) {
				t.Errorf("describe's progress lacks\n%s\n%s", tc.want, cmp.Diff(tc.want, got))
			}
		})
	}
}
