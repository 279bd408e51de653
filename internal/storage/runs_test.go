package storage

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestGroupRuns: a listing of the destination reads as runs, today's layout with a run
// level and the earlier one without it as run "-", each with its records and replicas.
func TestGroupRuns(t *testing.T) {
	dest := MustParseURI("s3://bkt/runs")
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	obj := func(key string, minutes int) Object {
		return Object{URI: URI{Bucket: "bkt", Key: "runs/" + key}, ModTime: t0.Add(time.Duration(minutes) * time.Minute)}
	}
	objs := []Object{
		obj("ml/mnist/0f3a9c2e/end.json", 9),
		obj("ml/mnist/0f3a9c2e/run.json", 1),
		obj("ml/mnist/0f3a9c2e/worker-0/attempts/1/logs/tensorflow.log", 5),
		obj("ml/mnist/0f3a9c2e/worker-0/progress.json", 6),
		obj("ml/mnist/0f3a9c2e/ps-0/manifest.json", 7),
		obj("ml/mnist/77aa00bb/run.json", 20),
		obj("ml/mnist/worker-0/manifest.json", 0),
		obj("ml/other", 0),
		obj("dev/x/12345678/chief-0/manifest.json", 3),
	}
	got := GroupRuns(dest, objs)
	type run struct {
		ID, Job, Run, Record, End string
		Replicas                  []string
		Progress                  int
		Started                   time.Time
	}
	var short []run
	for _, r := range got {
		short = append(short, run{r.Prefix.Key, r.Job, r.Run, r.Record.URI.Key, r.End.URI.Key, r.Replicas, len(r.Progress), r.Started()})
	}
	want := []run{
		{"runs/dev/x/12345678/", "x", "12345678", "", "", []string{"chief-0"}, 0, t0.Add(3 * time.Minute)},
		{"runs/ml/mnist/", "mnist", LegacyRun, "", "", []string{"worker-0"}, 0, t0},
		{"runs/ml/mnist/0f3a9c2e/", "mnist", "0f3a9c2e", "runs/ml/mnist/0f3a9c2e/run.json", "runs/ml/mnist/0f3a9c2e/end.json", []string{"ps-0", "worker-0"}, 1, t0.Add(time.Minute)},
		{"runs/ml/mnist/77aa00bb/", "mnist", "77aa00bb", "runs/ml/mnist/77aa00bb/run.json", "", nil, 0, t0.Add(20 * time.Minute)},
	}
	if diff := cmp.Diff(want, short); diff != "" {
		t.Errorf("GroupRuns (-want +got):\n%s", diff)
	}
	newest, ok := NewestRun(got, "ml", "mnist")
	if !ok || newest.Run != "77aa00bb" {
		t.Errorf("NewestRun = %q, %v; want 77aa00bb", newest.Run, ok)
	}
}

// TestRunIDNamesARun: the id made of a UID is what the layout reads as a run, never
// as a replica.
func TestRunIDNamesARun(t *testing.T) {
	id := tfjob.RunID("0F3A9C2E-1b4d-4e5f-8a6b-7c8d9e0f1a2b")
	if id != "0f3a9c2e" || !IsRunID(id) {
		t.Errorf("RunID = %q (IsRunID %v), want 0f3a9c2e", id, IsRunID(id))
	}
	for _, s := range []string{"worker-0", "ps-1", "chief-0", "-", "0f3a9c2", "0f3a9c2g"} {
		if IsRunID(s) {
			t.Errorf("IsRunID(%q) = true", s)
		}
	}
}

// TestParseRunName: JOB and JOB/RUN parse into their parts; anything else is refused
// naming the name and the form wanted.
func TestParseRunName(t *testing.T) {
	const dnsSubdomainErr = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
	for _, tc := range []struct {
		name    string
		want    RunName
		wantErr string
	}{
		{name: "mnist", want: RunName{Job: "mnist"}},
		{name: "mnist/0a1b2c3d", want: RunName{Job: "mnist", Run: "0a1b2c3d"}},
		{name: "mnist/-", want: RunName{Job: "mnist", Run: LegacyRun}},
		{name: "", wantErr: `run "": want JOB or JOB/RUN, RUN being 8 hex digits or "-"`},
		{name: "/0a1b2c3d", wantErr: `run "/0a1b2c3d": want JOB or JOB/RUN, RUN being 8 hex digits or "-"`},
		{name: "mnist/worker-0", wantErr: `run "mnist/worker-0": want JOB or JOB/RUN, RUN being 8 hex digits or "-"`},
		{name: "mnist/0a1b2c3d/x", wantErr: `run "mnist/0a1b2c3d/x": want JOB or JOB/RUN, RUN being 8 hex digits or "-"`},
		{name: "../0a1b2c3d", wantErr: `run "../0a1b2c3d": JOB ".." is no job's name: ` + dnsSubdomainErr},
		{name: "Mnist", wantErr: `run "Mnist": JOB "Mnist" is no job's name: ` + dnsSubdomainErr},
	} {
		got, err := ParseRunName(tc.name)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
			t.Errorf("ParseRunName(%q) error (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseRunName(%q) (-want +got):\n%s", tc.name, diff)
		}
	}
}
