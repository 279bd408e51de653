package controller

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestJobCannotMountANotebooksHomeByName: a claim nb-b-home (a notebook's home, made by
// tfk8s notebook start) is what volume "home" of a job "nb-b" would be called. The job
// fails with InvalidVolume naming spec.volumes[0].name and the claim, and no pod is
// created, rather than mounting another user's home.
func TestJobCannotMountANotebooksHomeByName(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	makeClaim(t, ns, "nb-b-home", map[string]string{tfv1.LabelNotebook: "nb-b"})
	job := testutil.MakeTFJob("nb-b", ns).Workers(1).Obj()
	job.Spec.Volumes = []tfv1.JobVolume{{Name: "home", MountPath: "/stolen", Size: ptr.To(resource.MustParse("1Gi"))}}
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, ns, job.Name, tfv1.JobFailed)
	c := conditionOf(got, tfv1.JobFailed)
	t.Logf("%s: %s", c.Reason, c.Message)
	if c.Reason != tfv1.ReasonInvalidVolume || !strings.Contains(c.Message, `spec.volumes[0].name "home": claim nb-b-home already exists and is owned by nothing`) {
		t.Errorf("Failed condition %s: %q; want %s naming spec.volumes[0].name and claim nb-b-home", c.Reason, c.Message, tfv1.ReasonInvalidVolume)
	}
	if msg := eventMessage(t, ns, got.UID, tfv1.ReasonInvalidVolume); msg != c.Message {
		t.Errorf("event %s says %q, want the condition's message", tfv1.ReasonInvalidVolume, msg)
	}
	if pods, err := jobPods(ctx, ns, job.Name); err != nil || len(pods) != 0 {
		t.Errorf("pods %v (%v), want none", pods, err)
	}
}

// TestTemplateCannotJoinANotebooksService: a template labelled tfk8s.io/notebook: nb-b
// (nb-b's Service selects by it) and tfk8s.io/tensorboard gets pods without those
// labels, and the job's FieldsIgnored condition and Warning event name each.
func TestTemplateCannotJoinANotebooksService(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("lure", ns).Workers(1).Obj()
	tmpl := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template
	tmpl.Labels = map[string]string{"app": "lure", tfv1.LabelNotebook: "nb-b", tfv1.LabelTensorBoard: "vjob"}
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	pod := waitPods(t, ns, job.Name, "lure-worker-0")["lure-worker-0"]
	for _, k := range []string{tfv1.LabelNotebook, tfv1.LabelTensorBoard} {
		if v, ok := pod.Labels[k]; ok {
			t.Errorf("pod lure-worker-0 is labelled %s=%s; want the template's label left out", k, v)
		}
	}
	if pod.Labels["app"] != "lure" {
		t.Errorf("pod labels %v; want the template's own app=lure kept", pod.Labels)
	}
	got := waitCondition(t, ns, job.Name, tfv1.JobFieldsIgnored)
	c := conditionOf(got, tfv1.JobFieldsIgnored)
	for _, k := range []string{tfv1.LabelNotebook, tfv1.LabelTensorBoard} {
		if want := "spec.tfReplicaSpecs.Worker.template.metadata.labels[" + k + "]"; !strings.Contains(c.Message, want) {
			t.Errorf("FieldsIgnored %q does not name %s", c.Message, want)
		}
	}
	if msg := eventMessage(t, ns, got.UID, tfv1.ReasonFieldsIgnored); msg != c.Message {
		t.Errorf("event %q, want the condition's message", msg)
	}
}

// TestAgentPodsAreBoundedAndAlone: an agent job's pods, as the API server stores them,
// have a sizeLimit on every emptyDir; an agent job sharing its process namespace fails
// with AgentPodRefused naming the field, and gets no pod.
func TestAgentPodsAreBoundedAndAlone(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := testutil.MakeTFJob("agent", ns).Workers(1).Code("s3://bucket/code/sha256-abc.tar.gz").Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	pod := waitPods(t, ns, job.Name, "agent-worker-0")["agent-worker-0"]
	dirs := 0
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil {
			continue
		}
		dirs++
		if v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.IsZero() {
			t.Errorf("emptyDir %s has no sizeLimit", v.Name)
		}
	}
	if dirs < 2 {
		t.Errorf("%d emptyDirs, want the agent's and the code's", dirs)
	}

	shared := testutil.MakeTFJob("shared", ns).Workers(1).Code("s3://bucket/code/sha256-abc.tar.gz").Obj()
	shared.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.ShareProcessNamespace = ptr.To(true)
	if err := k8sClient.Create(ctx, shared); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, ns, shared.Name, tfv1.JobFailed)
	c := conditionOf(got, tfv1.JobFailed)
	if c.Reason != tfv1.ReasonAgentPodRefused || !strings.Contains(c.Message, "spec.tfReplicaSpecs.Worker.template.spec.shareProcessNamespace") {
		t.Errorf("Failed condition %s: %q; want %s naming the field", c.Reason, c.Message, tfv1.ReasonAgentPodRefused)
	}
	if pods, err := jobPods(ctx, ns, shared.Name); err != nil || len(pods) != 0 {
		t.Errorf("pods %v (%v), want none", pods, err)
	}
}
