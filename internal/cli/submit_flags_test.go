package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobspec"
)

// parseSubmitFlags parses args as submit's flags and returns the job parameters.
func parseSubmitFlags(t *testing.T, args ...string) (jobspec.Values, error) {
	t.Helper()
	f := &submitFlags{}
	cmd := &cobra.Command{Use: "submit"}
	f.addFlags(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return f.params(nil)
}

func TestSubmitFlags(t *testing.T) {
	cpu, mem := resource.MustParse("500m"), resource.MustParse("2Gi")
	cases := []struct {
		name string
		args []string
		want jobspec.Values
	}{{
		name: "defaults: one worker",
		args: []string{"--name", "mnist", "--image", "tf"},
		want: jobspec.Values{Name: "mnist", Image: "tf", Workers: ptr.To[int32](1), RestartPolicy: ptr.To(tfv1.RestartPolicyExitCode),
			BackoffLimit: ptr.To[int32](6), CleanPodPolicy: ptr.To(tfv1.CleanPodPolicyRunning)},
	}, {
		name: "every flag",
		args: []string{"--name", "mnist", "--image", "tf", "--ps", "2", "--workers", "3", "--chief", "--evaluator",
			"--gpus", "1", "--cpu", "500m", "--memory", "2Gi", "--env", "A=1", "--env", "B=x=y",
			"--data", "s3://bkt/mnist", "--artifacts", "model", "--artifacts", "/ckpt",
			"--restart-policy", "onfailure", "--backoff-limit", "0", "--active-deadline", "2h", "--ttl-after-finished", "0s",
			"--clean-pod-policy", "All", "--expose-storage-credentials", "--resume-from", "mnist-v1"},
		want: jobspec.Values{
			Name: "mnist", Image: "tf", PS: ptr.To[int32](2), Workers: ptr.To[int32](3), Chief: ptr.To(true), Evaluator: ptr.To(true),
			GPUs: ptr.To[int64](1), CPU: &cpu, Memory: &mem,
			Env:           []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "x=y"}},
			Data:          []tfv1.DataSource{{Source: "s3://bkt/mnist/", Path: "/data"}},
			ArtifactPaths: []string{"model", "/ckpt"},
			RestartPolicy: ptr.To(tfv1.RestartPolicyOnFailure), BackoffLimit: ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To[int64](7200), TTLSecondsAfterFinished: ptr.To[int32](0),
			CleanPodPolicy: ptr.To(tfv1.CleanPodPolicyAll), ExposeCredentials: ptr.To(true), ResumeFrom: "mnist-v1",
		},
	}, {
		name: "with -f, flags not given leave the manifest alone",
		args: []string{"-f", "job.yaml"},
		want: jobspec.Values{},
	}, {
		name: "with -f, no workers is the manifest's business",
		args: []string{"-f", "job.yaml", "--workers", "0"},
		want: jobspec.Values{Workers: ptr.To[int32](0)},
	}, {
		name: "with -f, a policy given applies over the manifest's",
		args: []string{"-f", "job.yaml", "--restart-policy", "Never", "--ttl-after-finished", "1h"},
		want: jobspec.Values{RestartPolicy: ptr.To(tfv1.RestartPolicyNever), TTLSecondsAfterFinished: ptr.To[int32](3600)},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSubmitFlags(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSubmitFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--cpu", "abc"}, `--cpu "abc": not a quantity (want e.g. 2, 500m, 4Gi)`},
		{[]string{"--memory", "-1Gi"}, `--memory "-1Gi": must be positive`},
		{[]string{"--cpu", "0"}, `--cpu "0": must be positive`},
		{[]string{"--ps", "-1"}, `--ps -1: must not be negative`},
		{[]string{"--workers", "-2"}, `--workers -2: must not be negative`},
		{[]string{"--gpus", "-1"}, `--gpus -1: must not be negative`},
		{[]string{"--gpus", "1", "--gpu-type", "A100 80GB"}, `--gpu-type "A100 80GB": not a node label value: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{[]string{"--workers", "0"}, `--workers 0 needs --chief: a job needs a chief or at least one worker`},
		{[]string{"--env", "NOVALUE"}, `--env "NOVALUE": want NAME=VALUE`},
		{[]string{"--env", "=x"}, `--env "=x": want NAME=VALUE`},
		{[]string{"--name", "Bad_Name"}, `--name "Bad_Name": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`},
		{[]string{"--data", "s3://B/x"}, `--data: parsing S3 URI "s3://B/x": bucket name "B" must have 3 to 63 characters`},
		{[]string{"--artifacts", ""}, `--artifacts: empty path`},
		{[]string{"--restart-policy", "sometimes"}, `--restart-policy "sometimes": want one of Always|OnFailure|Never|ExitCode`},
		{[]string{"--clean-pod-policy", "Some"}, `--clean-pod-policy "Some": want one of All|Running|None`},
		{[]string{"--backoff-limit", "-1"}, `--backoff-limit -1: must not be negative`},
		{[]string{"--active-deadline", "0s"}, `--active-deadline 0s: must be at least 1s`},
		{[]string{"--active-deadline", "-5m"}, `--active-deadline -5m0s: must not be negative`},
		{[]string{"--active-deadline", "1.5s"}, `--active-deadline 1.5s: want whole seconds, e.g. 90s or 2h`},
		{[]string{"--ttl-after-finished", "1000000h"}, `--ttl-after-finished 1000000h0m0s: at most 2147483647 seconds`},
		{[]string{"--right-size"}, `--right-size: it applies a stored run's advice, so it needs --from-run JOB[/RUN]`},
		{[]string{"--resume-from", "s3://bkt/runs/"}, `--resume-from "s3://bkt/runs/": want the name of an earlier job: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			_, err := parseSubmitFlags(t, append([]string{"--image", "tf"}, tc.args...)...)
			if err == nil || err.Error() != tc.want {
				t.Errorf("params(%q) error = %v, want %q", tc.args, err, tc.want)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	cmd := &cobra.Command{Use: "submit", Run: func(*cobra.Command, []string) {}}
	f := &submitFlags{}
	f.addFlags(cmd)
	if err := cmd.ParseFlags([]string{"./code", "--name", "a", "--", "python3", "-u", "train.py", "--epochs", "3"}); err != nil {
		t.Fatal(err)
	}
	got, err := parseArgs(cmd, cmd.Flags().Args())
	if err != nil {
		t.Fatal(err)
	}
	want := submitArgs{dir: "./code", command: []string{"python3", "-u", "train.py", "--epochs", "3"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(submitArgs{})); diff != "" {
		t.Errorf("parseArgs (-want +got):\n%s", diff)
	}

	cmd2 := &cobra.Command{Use: "submit"}
	if err := cmd2.ParseFlags([]string{"./code", "python3", "train.py"}); err != nil {
		t.Fatal(err)
	}
	if _, err := parseArgs(cmd2, cmd2.Flags().Args()); err == nil {
		t.Error("parseArgs accepted a command without --")
	}
}

func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "locked")
	if err := os.Mkdir(unreadable, 0o000); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		dir, want string
	}{
		{dir, ""},
		{filepath.Join(dir, "missing"), "DIR " + filepath.Join(dir, "missing") + ": stat " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{file, "DIR " + file + ": not a directory"},
	}
	if os.Geteuid() != 0 { // root reads any directory
		cases = append(cases, struct{ dir, want string }{unreadable, "DIR " + unreadable + ": open " + unreadable + ": permission denied"})
	}
	for _, tc := range cases {
		err := checkDir("DIR", tc.dir)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("checkDir(%s) = %q, want %q", tc.dir, got, tc.want)
		}
	}
}
