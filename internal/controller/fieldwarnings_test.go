package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/fixtures"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestIgnoredFields checks which gang scheduling fields each default provider leaves
// without effect, for a job that names no provider, and that a job naming its
// provider is left to admission.
func TestIgnoredFields(t *testing.T) {
	all := &tfv1.SchedulingPolicy{MinAvailable: ptr.To[int32](2), Queue: "research",
		MinResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}, PriorityClass: "high"}
	cases := []struct {
		name string
		sp   *tfv1.SchedulingPolicy
		def  tfv1.GangProvider
		want []string
	}{
		{name: "no policy", def: "", want: nil},
		{name: "no gang scheduler", sp: all, def: "",
			want: []string{"runPolicy.schedulingPolicy.minAvailable", "runPolicy.schedulingPolicy.queue", "runPolicy.schedulingPolicy.minResources"}},
		{name: "native", sp: all, def: tfv1.GangProviderNative,
			want: []string{"runPolicy.schedulingPolicy.queue", "runPolicy.schedulingPolicy.minResources"}},
		{name: "scheduler-plugins", sp: all, def: tfv1.GangProviderSchedulerPlugins,
			want: []string{"runPolicy.schedulingPolicy.queue"}},
		{name: "volcano", sp: all, def: tfv1.GangProviderVolcano, want: nil},
		{name: "priorityClass and a timeout, no gang scheduler", def: "", want: nil,
			sp: &tfv1.SchedulingPolicy{PriorityClass: "high", ScheduleTimeoutSeconds: ptr.To[int32](60)}},
		{name: "the job names its provider", def: "", want: nil,
			sp: &tfv1.SchedulingPolicy{Provider: tfv1.GangProviderNative, Queue: "research"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range ignoredFields(fixtures.GangJob(tc.sp), tc.def) {
				got = append(got, f.path)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ignored fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoteIgnoredFields checks the FieldsIgnored condition: set with each field's
// path and why, removed once the fields are gone, and left alone on a finished job.
func TestNoteIgnoredFields(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	job := fixtures.GangJob(&tfv1.SchedulingPolicy{MinAvailable: ptr.To[int32](3), Queue: "research"})
	st := &tfv1.TFJobStatus{}
	noteIgnoredFields(job, "", st, now)
	c := findCondition(st, tfv1.JobFieldsIgnored)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != tfv1.ReasonFieldsIgnored {
		t.Fatalf("condition %+v, want FieldsIgnored True", c)
	}
	want := "the job names no gang scheduler (spec.runPolicy.schedulingPolicy.provider) and the controller's " +
		"--gang-scheduler is none, so its pods are scheduled one by one: ignored spec.runPolicy.schedulingPolicy.minAvailable, " +
		"spec.runPolicy.schedulingPolicy.queue (only volcano has queues; for Kueue, label the job kueue.x-k8s.io/queue-name)"
	if c.Message != want {
		t.Errorf("message\n%s\nwant\n%s", c.Message, want)
	}
	if s := jobState(st); s != "" {
		t.Errorf("state %q: FieldsIgnored must not become the job's state", s)
	}

	finished := st.DeepCopy()
	setCondition(finished, tfv1.JobSucceeded, metav1.ConditionTrue, tfv1.ReasonSucceeded, "done", now)
	noteIgnoredFields(fixtures.GangJob(nil), "", finished, now)
	if findCondition(finished, tfv1.JobFieldsIgnored) == nil {
		t.Error("a finished job's FieldsIgnored condition was removed; want it left as it was")
	}

	noteIgnoredFields(fixtures.GangJob(nil), "", st, now)
	if c := findCondition(st, tfv1.JobFieldsIgnored); c != nil {
		t.Errorf("condition %+v once the fields are gone; want none", c)
	}
}

// TestConstructPodDropsReservedLabels checks that a template cannot put a job's pod
// behind a notebook's Service or a TensorBoard's, nor set the controller's own
// labels, and that the job's FieldsIgnored condition names each key left out.
func TestConstructPodDropsReservedLabels(t *testing.T) {
	job := testutil.MakeTFJob("mnist", "ml").UID("uid-1").Workers(1).Obj()
	tmpl := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template
	tmpl.Labels = map[string]string{"app": "mnist", tfv1.LabelNotebook: "nb-b", tfv1.LabelJobName: "other"}
	tmpl.Annotations = map[string]string{tfv1.AnnotationFailuresInARow: "0"}

	pod := buildPod(t, job, tfv1.ReplicaTypeWorker, 0, PodOptions{})
	wantLabels := map[string]string{"app": "mnist", tfv1.LabelJobName: "mnist", tfv1.LabelReplicaType: "worker", tfv1.LabelReplicaIndex: "0"}
	if diff := cmp.Diff(wantLabels, pod.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	if len(pod.Annotations) != 0 {
		t.Errorf("pod annotations %v, want none", pod.Annotations)
	}

	st := &tfv1.TFJobStatus{}
	noteIgnoredFields(job, "", st, metav1.Now())
	c := findCondition(st, tfv1.JobFieldsIgnored)
	if c == nil {
		t.Fatal("no FieldsIgnored condition; want one naming the reserved keys")
	}
	for _, want := range []string{
		"spec.tfReplicaSpecs.Worker.template.metadata.labels[tfk8s.io/notebook]",
		"spec.tfReplicaSpecs.Worker.template.metadata.labels[tfk8s.io/job-name]",
		"spec.tfReplicaSpecs.Worker.template.metadata.annotations[tfk8s.io/failures-in-a-row]",
	} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q does not name %s", c.Message, want)
		}
	}
}
