package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

// putProgress stores a replica's progress record, as its agent does.
func (s *storedReplica) putProgress(p *tfevents.Progress) {
	s.f.t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		s.f.t.Fatal(err)
	}
	if err := s.f.srv.Client(s.f.t).PutObject(context.Background(), s.prefix.Join(storage.ProgressName), strings.NewReader(string(b)), int64(len(b)), storage.UploadOptions{}); err != nil {
		s.f.t.Fatal(err)
	}
}

// TestListAndDescribeShowProgress: the chief's agent stored its progress; list -o
// wide shows its step and loss, describe its scalars and how fresh they are. A running
// job without a record, and one that stores nothing, show "-".
func TestListAndDescribeShowProgress(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	f.mustSucceed("submit", code, "--name", "ps", "--image", "tf:2.16", "--chief", "--ps", "1", "--workers", "1", "--artifacts", "model", "--", "python3", "train.py")
	f.mustSucceed("submit", code, "--name", "quiet", "--image", "tf:2.16", "--workers", "1", "--artifacts", "model", "--", "python3", "train.py")
	// Applied as kubectl would, without storage: submit gives every job its S3 settings.
	bare := testutil.MakeTFJob("bare", f.ns).Workers(1).Obj()
	bare.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Image = "tf:2.16"
	if err := k8sClient.Create(context.Background(), bare); err != nil {
		t.Fatal(err)
	}
	f.waitPods("ps", "ps-chief-0", "ps-ps-0", "ps-worker-0")
	f.waitPods("quiet", "quiet-worker-0")
	f.waitPods("bare", "bare-worker-0")
	for _, pod := range []string{"ps-chief-0", "ps-ps-0", "ps-worker-0", "quiet-worker-0", "bare-worker-0"} {
		kubelet().Bind(t, f.ns, pod, "node-a")
		kubelet().SetRunning(t, f.ns, pod)
	}
	for _, job := range []string{"ps", "quiet", "bare"} {
		f.waitCondition(job, tfv1.JobRunning)
	}

	updated := time.Now().Add(-20 * time.Second).UTC()
	f.storeReplica("ps", "worker-0").putProgress(&tfevents.Progress{Step: 9, Updated: updated,
		Scalars: map[string]tfevents.Last{"logs/train/epoch_loss": {Step: 9, Value: 9}}})
	f.storeReplica("ps", "chief-0").putProgress(&tfevents.Progress{Step: 120, Updated: updated,
		Scalars: map[string]tfevents.Last{
			"logs/train/epoch_loss":      {Step: 5, Value: 0.0421},
			"logs/validation/epoch_loss": {Step: 5, Value: 0.05},
		}})

	r := f.mustSucceed("list", "-o", "wide")
	assertLines(t, r.stdout,
		`^NAME\s+STATE\s+WORKERS\s+PS\s+GPUS\s+AGE\s+CHIEF\s+EVALUATOR\s+ACTIVE\s+SUCCEEDED\s+FAILED\s+RESTARTS\s+STEP\s+LOSS\s+IMAGE$`,
		`^bare\s+Running\s+1\s+0\s+-\s+\S+\s+0\s+0\s+1\s+0\s+0\s+0\s+-\s+-\s+tf:2.16$`,
		`^ps\s+Running\s+1\s+1\s+-\s+\S+\s+1\s+0\s+3\s+0\s+0\s+0\s+120\s+0.0421\s+tf:2.16$`,
		`^quiet\s+Running\s+1\s+0\s+-\s+\S+\s+0\s+0\s+1\s+0\s+0\s+0\s+-\s+-\s+tf:2.16$`)
	if r.stderr != "" {
		t.Errorf("list -o wide warns: %s", r.stderr)
	}

	r = f.mustSucceed("describe", "ps")
	progress := `(?m)^Progress:\n` +
		`\s+Step:\s+120 \(from chief-0's summaries\)\n` +
		`\s+Loss:\s+0.0421 \(logs/train/epoch_loss at step 5\)\n` +
		`\s+Updated:\s+2\ds ago; the agents upload the summaries every 1m0s: .*\n` +
		`\s+SCALAR\s+STEP\s+VALUE\n` +
		`\s+logs/train/epoch_loss\s+5\s+0.0421\n` +
		`\s+logs/validation/epoch_loss\s+5\s+0.05\n` +
		`Conditions:`
	if !regexp.MustCompile(progress).MatchString(r.stdout) {
		t.Errorf("describe does not show the progress as %s:\n%s", progress, r.stdout)
	}
	if r = f.mustSucceed("describe", "quiet"); !strings.Contains(r.stdout, "Progress:\n  <none stored yet") {
		t.Errorf("describe of a job without summaries:\n%s", r.stdout)
	}
	if r = f.mustSucceed("describe", "bare"); strings.Contains(r.stdout, "Progress:") {
		t.Errorf("describe of a job that stores nothing shows a progress:\n%s", r.stdout)
	}
}
