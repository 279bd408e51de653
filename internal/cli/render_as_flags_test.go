package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// TestRenderToTFK8sPrintsTheFlags: render --to tfk8s says on stderr the submit
// command that gives the moved job, and names what of it the flags leave out (here
// the parameter servers' own CPU limit), which tfk8s render of those flags confirms.
func TestRenderToTFK8sPrintsTheFlags(t *testing.T) {
	run := func(args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		env := Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			Getenv: func(string) string { return "" }}
		if code := Main(context.Background(), args, env); code != 0 {
			t.Fatalf("tfk8s %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		}
		return out.String(), errOut.String()
	}
	moved, note := run("render", "--to", "tfk8s", "-f", "../jobspec/testdata/kubeflow-dist-mnist.yaml")
	line, rest, _ := strings.Cut(note, "\n")
	want := "as flags: tfk8s submit --name dist-mnist-for-e2e-test --image kubeflow/tf-dist-mnist-test:latest --ps 2 --workers 4 --restart-policy Never --backoff-limit 6 --clean-pod-policy None"
	if d := cmp.Diff(want, line); d != "" {
		t.Fatalf("stderr's first line (-want +got):\n%s", d)
	}
	if !strings.Contains(rest, "spec.tfReplicaSpecs.PS.template.spec.containers[0].resources.limits") {
		t.Errorf("stderr does not name the PS' CPU limit the flags leave out:\n%s", rest)
	}
	// The flags give the job but for what they were said to leave out.
	again, _ := run(append([]string{"render"}, strings.Fields(strings.TrimPrefix(line, "as flags: tfk8s submit "))...)...)
	for _, same := range []string{"replicas: 2", "replicas: 4", "image: kubeflow/tf-dist-mnist-test:latest", "cleanPodPolicy: None", "restartPolicy: Never"} {
		if !strings.Contains(moved, same) || !strings.Contains(again, same) {
			t.Errorf("%q not in both the moved job and the job of its flags:\n%s\n---\n%s", same, moved, again)
		}
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"--name": "--name", "B=x=y": "B=x=y", "s3://b/runs/": "s3://b/runs/",
		"x y": "'x y'", "": "''", "it's": `'it'\''s'`, "$HOME": "'$HOME'",
		// A terminal's escape sequence, a carriage return, a bidi override and an
		// invalid byte, from an untrusted run.json, in bash's ANSI-C quoting.
		"img\x1b]0;pwned\x07": `$'img\x1b]0;pwned\x07'`, "ok\rfake": `$'ok\x0dfake'`,
		"a\u202eb": `$'a\xe2\x80\xaeb'`, "\xff'\\": `$'\xff\'\\'`, "tab\tx": `$'tab\x09x'`,
		"café": "'café'",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestAsFlagsQuotesTheUnsaidPaths: a replica type with a control character, which
// the flags leave out, is named in ANSI-C quoting, not written raw to the terminal.
func TestAsFlagsQuotesTheUnsaidPaths(t *testing.T) {
	job := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Labels: map[string]string{"app": "a"}},
		Spec: tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
			tfv1.ReplicaTypeWorker: {Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "tensorflow", Image: "tf\x1b[31m"}}}}},
			"Evil\x1b[2J": {Replicas: ptr.To[int32](1)}}}}
	var out bytes.Buffer
	printAsFlags(&out, job)
	if strings.ContainsRune(out.String(), 0x1b) {
		t.Fatalf("an escape character written raw:\n%q", out.String())
	}
	for _, want := range []string{`--image $'tf\x1b[31m'`, `spec.tfReplicaSpecs.Evil\x1b[2J`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s not in:\n%s", want, out.String())
		}
	}
}
