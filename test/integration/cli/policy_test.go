package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// policies are the parts of a job that say how it retries, ends and is cleaned up.
type policies struct {
	RestartPolicies   map[tfv1.ReplicaType]tfv1.RestartPolicy
	RunPolicy         tfv1.RunPolicy
	ExposeCredentials bool
}

func policiesOf(job *tfv1.TFJob) policies {
	p := policies{RestartPolicies: map[tfv1.ReplicaType]tfv1.RestartPolicy{}, RunPolicy: job.Spec.RunPolicy}
	for rt, spec := range job.Spec.TFReplicaSpecs {
		p.RestartPolicies[rt] = spec.RestartPolicy
	}
	if job.Spec.Storage != nil {
		p.ExposeCredentials = job.Spec.Storage.ExposeCredentials
	}
	return p
}

// TestSubmitFaultTolerance: submit's jobs retry what is worth retrying by default, and
// the flags set every policy; render shows what submit stores, and the API server
// takes it. A bad value is refused naming its flag, and nothing is created.
func TestSubmitFaultTolerance(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	common := []string{code, "--image", "tf:2.16", "--ps", "1", "--artifacts", "model"}
	cases := []struct {
		name  string
		flags []string
		want  policies
	}{{
		name: "defaults",
		want: policies{
			RestartPolicies: map[tfv1.ReplicaType]tfv1.RestartPolicy{tfv1.ReplicaTypePS: tfv1.RestartPolicyExitCode, tfv1.ReplicaTypeWorker: tfv1.RestartPolicyExitCode},
			RunPolicy:       tfv1.RunPolicy{BackoffLimit: ptr.To[int32](6), CleanPodPolicy: ptr.To(tfv1.CleanPodPolicyRunning)},
		},
	}, {
		name: "every-flag",
		flags: []string{"--restart-policy", "OnFailure", "--backoff-limit", "2", "--active-deadline", "2h", "--ttl-after-finished", "10m",
			"--clean-pod-policy", "All", "--expose-storage-credentials"},
		want: policies{
			RestartPolicies: map[tfv1.ReplicaType]tfv1.RestartPolicy{tfv1.ReplicaTypePS: tfv1.RestartPolicyOnFailure, tfv1.ReplicaTypeWorker: tfv1.RestartPolicyOnFailure},
			RunPolicy: tfv1.RunPolicy{BackoffLimit: ptr.To[int32](2), CleanPodPolicy: ptr.To(tfv1.CleanPodPolicyAll),
				ActiveDeadlineSeconds: ptr.To[int64](7200), TTLSecondsAfterFinished: ptr.To[int32](600)},
			ExposeCredentials: true,
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"--name", tc.name}, common...), tc.flags...)
			args = append(args, "--", "python3", "train.py")
			r := f.mustSucceed(append([]string{"render"}, args...)...)
			rendered := &tfv1.TFJob{}
			if err := yaml.UnmarshalStrict([]byte(r.stdout), rendered); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, policiesOf(rendered)); diff != "" {
				t.Errorf("render (-want +got):\n%s", diff)
			}
			f.mustSucceed(append([]string{"submit"}, args...)...)
			if diff := cmp.Diff(tc.want, policiesOf(f.getJob(tc.name))); diff != "" {
				t.Errorf("stored job (-want +got):\n%s", diff)
			}
		})
	}

	for _, bad := range [][]string{
		{"--restart-policy", "Sometimes", `--restart-policy "Sometimes": want one of Always|OnFailure|Never|ExitCode`},
		{"--clean-pod-policy", "Most", `--clean-pod-policy "Most": want one of All|Running|None`},
		{"--backoff-limit", "-1", "--backoff-limit -1: must not be negative"},
		{"--active-deadline", "90", `invalid argument "90" for "--active-deadline" flag`},
		{"--ttl-after-finished", "1.5s", "--ttl-after-finished 1.5s: want whole seconds"},
	} {
		args := append(append([]string{"submit", "--name", "bad"}, common...), bad[0], bad[1], "--", "python3", "train.py")
		if r := f.tfk8s(args...); r.code == 0 || !strings.Contains(r.stderr, bad[2]) {
			t.Errorf("%s %s: want %q, got %s", bad[0], bad[1], bad[2], r)
		}
	}
	if got := f.jobs(); slices.Contains(got, "bad") {
		t.Errorf("a refused flag created the job: %v", got)
	}
}

// TestSubmitResumeFrom: --resume-from names an earlier job; the new job's artifacts
// resume from its prefix, once S3 shows that it stored something there.
func TestSubmitResumeFrom(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	submit := func(name string, extra ...string) result {
		args := append([]string{"submit", code, "--name", name, "--image", "tf:2.16"}, extra...)
		return f.tfk8s(append(args, "--", "python3", "train.py")...)
	}
	prefix := storage.JobPrefix(storage.URI{Bucket: f.srv.Bucket, Key: "runs/"}, f.ns, "v1").String()

	// Nothing stored yet, or nothing to back up: refused, nothing created.
	if r := submit("v2", "--artifacts", "model", "--resume-from", "v1"); r.code == 0 ||
		!strings.Contains(r.stderr, "--resume-from v1: nothing to resume from: "+prefix+" holds no manifest of replica worker-0") {
		t.Errorf("resuming from a job that stored nothing: %s", r)
	}
	if r := submit("v2", "--resume-from", "v1"); r.code == 0 || !strings.Contains(r.stderr, "--resume-from v1 needs --artifacts") {
		t.Errorf("resuming without --artifacts: %s", r)
	}
	if got := f.jobs(); len(got) != 0 {
		t.Errorf("refused submits created %v", got)
	}

	// v1 ran (and is gone): its worker stored a checkpoint.
	f.storeReplica("v1", "worker-0").artifact("/workspace/model/ckpt-9", "weights").manifest()
	if r := submit("v2", "--artifacts", "model", "--resume-from", "v1"); r.code != 0 {
		t.Fatalf("resuming from v1: %s", r)
	}
	if got := f.getJob("v2").Spec.Artifacts.ResumeFrom; got != prefix {
		t.Errorf("spec.artifacts.resumeFrom = %q, want %q", got, prefix)
	}
	// A job that exists says where it stored.
	f.storeReplica("v2", "worker-0").artifact("/workspace/model/ckpt-12", "weights").manifest()
	if r := submit("v3", "--artifacts", "model", "--resume-from", "v2"); r.code != 0 {
		t.Fatalf("resuming from v2: %s", r)
	}
	v2 := f.getJob("v2")
	if got, want := f.getJob("v3").Spec.Artifacts.ResumeFrom, v2.Spec.Artifacts.Destination+"/"+f.ns+"/v2/"+tfjob.RunID(string(v2.UID))+"/"; got != want {
		t.Errorf("spec.artifacts.resumeFrom = %q, want %q", got, want)
	}
}
