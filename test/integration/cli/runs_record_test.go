package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestFromRunTreatsTheRecordAsData: someone with the bucket's keys rewrites a run's
// run.json to name kube-system, hostPID and a notebook's label. submit --from-run then
// creates nothing in kube-system: while the job exists its TFJob is used, not the
// record; once it is gone the job is only shown (namespace from where the run was
// found, the ignored fields named), and --yes submits it in that namespace.
func TestFromRunTreatsTheRecordAsData(t *testing.T) {
	f := newFixture(t)
	manifest := filepath.Join(t.TempDir(), "tfjob.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: tfk8s.io/v1alpha1
kind: TFJob
metadata: {name: rec}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      template:
        spec:
          containers: [{name: tensorflow, image: "tf:2.21", command: [python3, train.py]}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mustSucceed("submit", "-f", manifest)
	run := tfjob.RunID(string(f.getJob("rec").UID))
	f.rewriteRecord("rec", run, func(rec *tfjob.RunRecord) {
		rec.Namespace, rec.Job.Namespace = "kube-system", "kube-system"
		rec.Job.Labels = map[string]string{tfv1.LabelNotebook: "nb-b", "team": "vision"}
		rec.Job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.HostPID = true
	})

	// The job exists: its TFJob, not the record, is submitted again.
	f.mustSucceed("submit", "--from-run", "rec/"+run, "--name", "rec-live")
	if live := f.getJob("rec-live"); live.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.HostPID {
		t.Error("rec-live has hostPID: the record was trusted over the job in the cluster")
	}

	// Gone: shown, not submitted, and the exit code says so.
	f.mustSucceed("delete", "rec", "--wait")
	r := f.tfk8s("submit", "--from-run", "rec/"+run)
	if r.code == 0 {
		t.Errorf("submit --from-run of an unverified record exited 0: a script would take the job as submitted")
	}
	for _, want := range []string{
		`ignored namespace "kube-system" (the run is stored under namespace ` + f.ns + `) in run.json`,
		"ignored label " + tfv1.LabelNotebook + " in run.json",
		"no tfjob " + f.ns + "/rec is left to compare run.json's spec with; the job is shown, not submitted",
		// The same job as flags, and the record's hostPID named as what no flag says.
		"as flags: tfk8s submit --name rec ",
		"spec.tfReplicaSpecs.Worker.template.spec.hostPID",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("submit --from-run stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "hostPID: true") || !strings.Contains(r.stdout, "namespace: "+f.ns) {
		t.Errorf("submit --from-run shows:\n%s\nwant the job, hostPID and namespace %s", r.stdout, f.ns)
	}
	f.assertNoJob(f.ns, "rec")
	f.assertNoJob("kube-system", "rec")
	assertNotSubmittedForPrograms(t, f, run)

	// --yes submits what was shown, in the namespace the run was found in.
	f.mustSucceed("submit", "--from-run", "rec/"+run, "--yes")
	if again := f.getJob("rec"); again.Labels["team"] != "vision" || again.Labels[tfv1.LabelNotebook] != "" {
		t.Errorf("submitted with labels %v, want team=vision without %s", again.Labels, tfv1.LabelNotebook)
	}
	f.assertNoJob("kube-system", "rec")
}

// assertNotSubmittedForPrograms: what the Python SDK reads of the same refusal, with
// TFK8S_ERRORS=json and -o json: the job as JSON on stdout, a NotSubmitted error
// line last on stderr, a non-zero exit code.
func assertNotSubmittedForPrograms(t *testing.T, f *fixture, run string) {
	t.Helper()
	f.env["TFK8S_ERRORS"] = "json"
	defer delete(f.env, "TFK8S_ERRORS")
	r := f.tfk8s("submit", "--from-run", "rec/"+run, "-o", "json")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	var line struct {
		Error struct{ Type, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil || line.Error.Type != "NotSubmitted" || r.code == 0 {
		t.Errorf("submit --from-run with TFK8S_ERRORS=json: %s\nwant a NotSubmitted error line last and a non-zero exit", r)
	}
	shown := &tfv1.TFJob{}
	if err := json.Unmarshal([]byte(r.stdout), shown); err != nil || shown.Name != "rec" || shown.Namespace != f.ns {
		t.Errorf("submit --from-run -o json printed %q (%v), want tfjob %s/rec as JSON", r.stdout, err, f.ns)
	}
	f.assertNoJob(f.ns, "rec")
}

// rewriteRecord edits the run.json of job's run in the bucket, as anyone holding the
// bucket's keys can.
func (f *fixture) rewriteRecord(job, run string, edit func(*tfjob.RunRecord)) {
	f.t.Helper()
	ctx := context.Background()
	u := storage.RunPrefix(storage.URI{Bucket: f.srv.Bucket, Key: "runs/"}, f.ns, job, run).Join(storage.RunRecordName)
	c := f.srv.Client(f.t)
	rec := &tfjob.RunRecord{}
	if found, err := c.GetJSON(ctx, u, rec); err != nil || !found {
		f.t.Fatalf("reading %s: found %v, %v", u, found, err)
	}
	edit(rec)
	body, err := json.Marshal(rec)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := c.PutObject(ctx, u, strings.NewReader(string(body)), int64(len(body)), storage.UploadOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// assertNoJob fails the test if a TFJob name exists in ns.
func (f *fixture) assertNoJob(ns, name string) {
	f.t.Helper()
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &tfv1.TFJob{})
	if !apierrors.IsNotFound(err) {
		f.t.Errorf("tfjob %s/%s: %v, want none", ns, name, err)
	}
}
