package tensorboard

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func twoRuns() []Run {
	return []Run{
		{Job: "mnist", Run: "1a2b3c4d", Prefix: "s3://b/runs/team/mnist/1a2b3c4d/", Secret: "s3"},
		{Job: "resnet", Run: "5e6f7a8b", Prefix: "s3://b/runs/team/resnet/5e6f7a8b/", Secret: "s3"},
	}
}

func TestPodContainers(t *testing.T) {
	pod := Pod(Spec{Namespace: "team", Runs: twoRuns(), Secret: "s3"})

	type container struct {
		Name, Image string
		Command     []string
		Mounts      []corev1.VolumeMount
	}
	var got []container
	for _, c := range pod.Spec.Containers {
		got = append(got, container{c.Name, c.Image, c.Command, c.VolumeMounts})
	}
	mount := []corev1.VolumeMount{{Name: "summaries", MountPath: "/tensorboard"}}
	want := []container{
		{"mirror-0", images.Agent, []string{"tfk8s-agent", "mirror", "--from", "s3://b/runs/team/mnist/1a2b3c4d/",
			"--to", "/tensorboard/mnist-1a2b3c4d", "--interval", "5s", "--include", "*tfevents*"}, mount},
		{"mirror-1", images.Agent, []string{"tfk8s-agent", "mirror", "--from", "s3://b/runs/team/resnet/5e6f7a8b/",
			"--to", "/tensorboard/resnet-5e6f7a8b", "--interval", "5s", "--include", "*tfevents*"}, mount},
		{"tensorboard", images.TensorFlow, []string{"tensorboard", "--logdir", "/tensorboard", "--bind_all", "--port", "6006",
			"--reload_interval", "5", "--reload_multifile", "true"},
			[]corev1.VolumeMount{{Name: "summaries", MountPath: "/tensorboard", ReadOnly: true}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	if v := pod.Spec.Volumes; len(v) != 1 || v[0].Name != "summaries" || v[0].EmptyDir == nil {
		t.Errorf("volumes = %+v, want the emptyDir summaries alone", v)
	}
	tb := pod.Spec.Containers[2]
	if tb.ReadinessProbe == nil || tb.ReadinessProbe.HTTPGet == nil || len(tb.Ports) != 1 || tb.Ports[0].ContainerPort != tfjob.TensorBoardPort {
		t.Errorf("tensorboard: probe %+v, ports %+v; want an HTTP probe and port %d", tb.ReadinessProbe, tb.Ports, tfjob.TensorBoardPort)
	}
	if len(tb.Env) != 0 {
		t.Errorf("tensorboard has env %+v; want none: it reads no S3", tb.Env)
	}
}

// TestPodEnvBySecretOnly checks that each mirror reads every S3 setting from the runs'
// Secret by reference: no credential is ever literal in the pod.
func TestPodEnvBySecretOnly(t *testing.T) {
	pod := Pod(Spec{Namespace: "team", Runs: twoRuns(), Secret: "s3"})
	for _, c := range pod.Spec.Containers[:2] {
		var names []string
		for _, e := range c.Env {
			names = append(names, e.Name)
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s: env %s = %+v, want a SecretKeyRef only", c.Name, e.Name, e)
				continue
			}
			if ref := e.ValueFrom.SecretKeyRef; ref.Name != "s3" {
				t.Errorf("%s: env %s reads Secret %q, want s3", c.Name, e.Name, ref.Name)
			}
		}
		want := []string{tfjob.EnvS3Endpoint, tfjob.EnvAccessKeyID, tfjob.EnvSecretAccessKey, tfjob.EnvRegion, tfjob.EnvS3Insecure}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("%s: env names (-want +got):\n%s", c.Name, diff)
		}
	}
}

func TestPodMeta(t *testing.T) {
	pod := Pod(Spec{Namespace: "team", Runs: twoRuns(), Secret: "s3", AgentImage: "agent:x", Image: "tb:y", TTL: 90 * time.Minute})
	if pod.Namespace != "team" || !strings.HasPrefix(pod.Name, "tensorboard-runs-") {
		t.Errorf("pod %s/%s, want team/tensorboard-runs-<hash>", pod.Namespace, pod.Name)
	}
	if errs := validation.IsDNS1123Subdomain(pod.Name); len(errs) > 0 {
		t.Errorf("pod name %q: %v", pod.Name, errs)
	}
	if got, want := pod.Labels[LabelRuns], strings.TrimPrefix(pod.Name, "tensorboard-runs-"); got != want {
		t.Errorf("label %s = %q, want %q, the hash in its name", LabelRuns, got, want)
	}
	if got := Selector(twoRuns()); got != LabelRuns+"="+pod.Labels[LabelRuns] {
		t.Errorf("Selector = %q, does not select the pod labelled %v", got, pod.Labels)
	}
	if got := pod.Annotations[AnnotationRuns]; got != "mnist/1a2b3c4d,resnet/5e6f7a8b" {
		t.Errorf("annotation %s = %q", AnnotationRuns, got)
	}
	if s := pod.Spec; s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v, want false", s.AutomountServiceAccountToken)
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d != 5400 {
		t.Errorf("activeDeadlineSeconds = %v, want 5400 (--ttl 90m)", d)
	}
	if c := pod.Spec.Containers; c[0].Image != "agent:x" || c[1].Image != "agent:x" || c[2].Image != "tb:y" {
		t.Errorf("images %s %s %s, want agent:x agent:x tb:y", c[0].Image, c[1].Image, c[2].Image)
	}
	if d := Pod(Spec{Runs: twoRuns()}).Spec.ActiveDeadlineSeconds; d == nil || *d != 3600 {
		t.Errorf("default activeDeadlineSeconds = %v, want 3600", d)
	}
}

func TestPodNameIsTheRunsSet(t *testing.T) {
	runs := twoRuns()
	swapped := []Run{runs[1], runs[0]}
	if PodName(runs) != PodName(swapped) {
		t.Errorf("PodName depends on the order: %s, %s", PodName(runs), PodName(swapped))
	}
	other := []Run{runs[0], {Job: "resnet", Run: "00000000", Prefix: "s3://b/x/", Secret: "s3"}}
	if PodName(runs) == PodName(other) {
		t.Errorf("PodName(%v) = PodName(%v) = %s", runs, other, PodName(runs))
	}
	if got := (Run{Job: "old", Run: storage.LegacyRun}).Name(); got != "old" {
		t.Errorf("name of a run stored before runs = %q, want old", got)
	}
}

func TestCheck(t *testing.T) {
	nine := make([]Run, 9)
	for i := range nine {
		nine[i] = Run{Job: "j", Run: strings.Repeat(string(rune('0'+i)), 8), Prefix: "s3://b/", Secret: "s3"}
	}
	noPrefix := twoRuns()
	noPrefix[1].Prefix = ""
	twice := append(twoRuns(), twoRuns()[0])
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"two runs", Spec{Runs: twoRuns(), Secret: "s3"}, ""},
		{"none", Spec{Secret: "s3"}, "no run to show"},
		{"nine", Spec{Runs: nine, Secret: "s3"}, "9 runs: one TensorBoard shows at most 8"},
		{"no secret", Spec{Runs: twoRuns()}, "no Secret to read S3 with"},
		{"stores nothing", Spec{Runs: noPrefix, Secret: "s3"}, "run resnet/5e6f7a8b stores nothing in S3"},
		{"twice", Spec{Runs: twice, Secret: "s3"}, "run mnist/1a2b3c4d is named twice"},
		{"ttl", Spec{Runs: twoRuns(), Secret: "s3", TTL: time.Millisecond}, "--ttl 1ms: want 1s or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check() = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestSharedSecret(t *testing.T) {
	other := twoRuns()
	other[1].Secret = "resnet-storage"
	none := twoRuns()
	none[0].Secret = ""
	for _, tc := range []struct {
		name string
		runs []Run
		want string
	}{
		{"same", twoRuns(), "s3"},
		{"different", other, ""},
		{"one names none", none, ""},
		{"no runs", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SharedSecret(tc.runs); got != tc.want {
				t.Errorf("SharedSecret = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestOwnSecret checks that the pod's own Secret goes with the pod: named as it,
// owned by it.
func TestOwnSecret(t *testing.T) {
	pod := Pod(Spec{Namespace: "team", Runs: twoRuns(), Secret: PodName(twoRuns())})
	pod.UID = "pod-uid"
	data := map[string][]byte{tfjob.SecretKeyEndpoint: []byte("http://s3:9000")}
	got := OwnSecret(pod, data)
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: "team",
			Labels:          map[string]string{LabelRuns: Hash(twoRuns())},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: "pod-uid"}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OwnSecret (-want +got):\n%s", diff)
	}
	if ref := pod.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef; ref.Name != got.Name {
		t.Errorf("the mirrors read Secret %s, not the pod's own %s", ref.Name, got.Name)
	}
}
