package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestRunNameBeforeS3: a run's name that names no run is said as such before the S3
// settings are read, so that without any the user learns what was wrong with the name.
func TestRunNameBeforeS3(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a Kubeflow job's runs", []string{"runs", "show", "kubeflow.org/kf"}, "tfjob.kubeflow.org/kf has no runs: "},
		{"a run's id no run has", []string{"runs", "show", "mnist/latest"}, `run "mnist/latest": want JOB or JOB/RUN, RUN being 8 hex digits`},
		{"a job and run too many", []string{"runs", "show", "a/0f3a9c2e/b"}, `run "a/0f3a9c2e/b": want JOB or JOB/RUN`},
		{"--from-run a Kubeflow job", []string{"submit", "--from-run", "kubeflow.org/kf"}, "--from-run kubeflow.org/kf: tfjob.kubeflow.org/kf has no runs: "},
		{"--from-run a run's id no run has", []string{"submit", "--from-run", "mnist/latest"}, `--from-run mnist/latest: run "mnist/latest": want JOB or JOB/RUN`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			env := Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
				Getenv: func(string) string { return "" }, Name: "tfk8s"}
			args := append([]string{"--kubeconfig", empty}, tc.args...)
			if code := Main(context.Background(), args, env); code == 0 || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("tfk8s %v without S3 settings: exit %d, stderr %q; want %q", tc.args, code, errOut.String(), tc.want)
			}
		})
	}
}
