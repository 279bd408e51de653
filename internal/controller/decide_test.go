package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// planView is what a plan asks the act steps to write, in words a table can hold.
type planView struct {
	Suspend bool
	Remove  []string
	Start   bool
	Missing []ReplicaKey
	Failed  string
}

func viewPlan(p *plan) planView {
	v := planView{Suspend: p.suspend, Start: p.start != nil}
	for _, pod := range p.remove {
		v.Remove = append(v.Remove, pod.Name)
	}
	if p.start != nil {
		v.Missing = p.start.missing
	}
	if c := findCondition(p.o.status, tfv1.JobFailed); c != nil && c.Status == metav1.ConditionTrue {
		v.Failed = c.Reason
	}
	return v
}

// TestDecide: decide alone, with no API server, says which pods go, which are created,
// and whether the job is suspended or failed.
func TestDecide(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	job := func() *testutil.TFJobWrapper { return testutil.MakeTFJob("j", "ml").UID("uid-j").PS(1).Workers(2) }
	pod := func(rt tfv1.ReplicaType, i int32) *testutil.PodWrapper { return testutil.MakePod("j", "ml", rt, i) }
	timeout := func(action tfv1.ScheduleTimeoutAction) *tfv1.TFJob {
		j := job().Obj()
		j.Spec.RunPolicy.SchedulingPolicy = &tfv1.SchedulingPolicy{ScheduleTimeoutSeconds: ptr.To[int32](60), OnScheduleTimeout: action}
		return j
	}
	succeeded := job().Obj()
	succeeded.Status.Conditions = []metav1.Condition{{Type: string(tfv1.JobSucceeded), Status: metav1.ConditionTrue, Reason: "Earlier"}}
	cases := []struct {
		name string
		job  *tfv1.TFJob
		pods []*corev1.Pod
		// rival is the job of the other API that holds the name, "" for none.
		rival string
		want  planView
	}{
		{name: "a new job creates every pod", job: job().Obj(),
			want: planView{Start: true, Missing: []ReplicaKey{{Type: tfv1.ReplicaTypePS, Index: 0}, {Type: tfv1.ReplicaTypeWorker, Index: 0}, {Type: tfv1.ReplicaTypeWorker, Index: 1}}}},
		{name: "a running job creates the pod it lacks", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypePS, 0).Phase(corev1.PodRunning).Obj(), pod(tfv1.ReplicaTypeWorker, 1).Phase(corev1.PodRunning).Obj()},
			want: planView{Start: true, Missing: []ReplicaKey{{Type: tfv1.ReplicaTypeWorker, Index: 0}}}},
		{name: "a suspended job deletes its active pods", job: job().Suspend(true).Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypePS, 0).Phase(corev1.PodRunning).Obj(), pod(tfv1.ReplicaTypeWorker, 0).Phase(corev1.PodSucceeded).Obj()},
			want: planView{Remove: []string{"j-ps-0"}}},
		{name: "a finished job cleans up its running pods", job: succeeded,
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypePS, 0).Phase(corev1.PodRunning).Obj(), pod(tfv1.ReplicaTypeWorker, 0).Phase(corev1.PodSucceeded).Obj()},
			want: planView{Remove: []string{"j-ps-0"}}},
		{name: "not scheduled in time, suspended", job: timeout(tfv1.ScheduleTimeoutSuspend),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypePS, 0).Obj()},
			want: planView{Suspend: true, Remove: []string{"j-ps-0"}}},
		{name: "not scheduled in time, failed", job: timeout(tfv1.ScheduleTimeoutFail),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypePS, 0).Obj()},
			want: planView{Remove: []string{"j-ps-0"}, Failed: tfv1.ReasonGangScheduleTimeout}},
		{name: "TF_CONFIG too large to carry without the agent", job: testutil.MakeTFJob("j", "ml").PS(1).Workers(5000).Obj(),
			want: planView{Failed: tfv1.ReasonTFConfigTooLarge}},
		{name: "a job of the other API holds the name: failed, no pod", job: job().Obj(), rival: "tfjob.kubeflow.org/j",
			want: planView{Failed: tfv1.ReasonJobNameTaken}},
		{name: "a finished job stays as it ended beside a rival", job: succeeded, rival: "tfjob.kubeflow.org/j",
			want: planView{}},
	}
	r := NewTFJobReconciler(nil, nil, Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.job.DeepCopy()
			got := viewPlan(r.decide(&world{job: tc.job, pods: tc.pods, kueue: &kueueView{status: &workloadStatus{}}, rival: tc.rival, now: now}))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.job); diff != "" {
				t.Errorf("decide changed the job (-before +after):\n%s", diff)
			}
		})
	}
}

// TestDecideKueue: a queued job gets its Workload, waits until Kueue admits it, and
// gives back an evicted Workload's quota only once its pods are gone.
func TestDecideKueue(t *testing.T) {
	wl := func(active bool) *unstructured.Unstructured {
		u := newKueueObject(WorkloadGVK.Kind)
		u.SetName("tfjob-a")
		u.Object["spec"] = map[string]any{"active": active}
		return u
	}
	cond := func(typ string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Test", Message: "by test"}
	}
	admitted := &workloadStatus{Conditions: []metav1.Condition{cond(wlQuotaReserved), cond(wlAdmitted)},
		Admission: &workloadAdmission{ClusterQueue: "cq"}}
	evicted := &workloadStatus{Conditions: []metav1.Condition{cond(wlQuotaReserved), cond(wlEvicted)}}
	running := []*corev1.Pod{testutil.MakePod("a", "ns", tfv1.ReplicaTypeWorker, 0).Phase(corev1.PodRunning).Obj()}
	finished := testutil.MakeTFJob("a", "ns").Workers(1).Obj()
	finished.Status.Conditions = []metav1.Condition{{Type: string(tfv1.JobSucceeded), Status: metav1.ConditionTrue}}

	type view struct {
		Unavailable, Create, Finish, Release, Admitted bool
		Active                                         *bool
		Hold                                           string
	}
	cases := []struct {
		name string
		job  *tfv1.TFJob
		pods []*corev1.Pod
		kv   kueueView
		want view
	}{
		{name: "in no queue", kv: kueueView{}},
		{name: "Kueue not served", kv: kueueView{queue: "q"}, want: view{Unavailable: true}},
		{name: "no Workload yet", kv: kueueView{queue: "q", served: true, status: &workloadStatus{}},
			want: view{Create: true, Hold: tfv1.ReasonQueued}},
		{name: "admitted", kv: kueueView{queue: "q", served: true, wl: wl(true), status: admitted}, want: view{Admitted: true}},
		{name: "suspended by its user", job: testutil.MakeTFJob("a", "ns").Workers(1).Suspend(true).Obj(),
			kv: kueueView{queue: "q", served: true, wl: wl(true), status: admitted}, want: view{Active: ptr.To(false)}},
		{name: "evicted, pods still running", pods: running, kv: kueueView{queue: "q", served: true, wl: wl(true), status: evicted},
			want: view{Hold: tfv1.ReasonPreempted}},
		{name: "evicted, pods gone", kv: kueueView{queue: "q", served: true, wl: wl(true), status: evicted},
			want: view{Hold: tfv1.ReasonPreempted, Release: true}},
		{name: "finished", job: finished, kv: kueueView{queue: "q", served: true, wl: wl(true), status: admitted}, want: view{Finish: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job
			if job == nil {
				job = testutil.MakeTFJob("a", "ns").Workers(1).Obj()
			}
			p := decideKueue(job, tc.pods, &tc.kv)
			got := view{Unavailable: p.unavailable != "", Create: p.create, Finish: p.finish, Release: p.release,
				Admitted: p.admission != nil, Active: p.active, Hold: p.holdReason}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Kueue plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecordStart: what the API server said of a running job's writes goes into its
// status: new pods as active, a refusal and its end, a failure.
func TestRecordStart(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	refused := []metav1.Condition{{Type: string(tfv1.JobPodCreationRefused), Status: metav1.ConditionTrue, Reason: tfv1.ReasonPodCreationFailed}}
	cases := []struct {
		name       string
		conditions []metav1.Condition
		out        startOutcome
		wantActive int32
		want       map[tfv1.JobState]string
	}{
		{name: "pods created", out: startOutcome{created: []ReplicaKey{{Type: tfv1.ReplicaTypeWorker, Index: 0}, {Type: tfv1.ReplicaTypeWorker, Index: 1}}, accepted: true},
			wantActive: 2, want: map[tfv1.JobState]string{}},
		{name: "refused", out: startOutcome{created: []ReplicaKey{{Type: tfv1.ReplicaTypeWorker, Index: 0}}, refusal: "exceeded quota"},
			wantActive: 1, want: map[tfv1.JobState]string{tfv1.JobPodCreationRefused: "True " + tfv1.ReasonPodCreationFailed}},
		{name: "accepted again", conditions: refused, out: startOutcome{accepted: true},
			want: map[tfv1.JobState]string{tfv1.JobPodCreationRefused: "False " + tfv1.ReasonPodsCreated}},
		{name: "Service name taken", out: startOutcome{failReason: tfv1.ReasonServiceNameTaken, failMessage: "taken"},
			want: map[tfv1.JobState]string{tfv1.JobFailed: "True " + tfv1.ReasonServiceNameTaken, tfv1.JobRunning: "False " + tfv1.ReasonServiceNameTaken}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &tfv1.TFJobStatus{Conditions: tc.conditions,
				ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{tfv1.ReplicaTypeWorker: {}}}
			recordStart(st, tc.out, now)
			got := map[tfv1.JobState]string{}
			for _, c := range st.Conditions {
				got[tfv1.JobState(c.Type)] = strings.Join([]string{string(c.Status), c.Reason}, " ")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if a := st.ReplicaStatuses[tfv1.ReplicaTypeWorker].Active; a != tc.wantActive {
				t.Errorf("active %d, want %d", a, tc.wantActive)
			}
			if f := meta.IsStatusConditionTrue(st.Conditions, string(tfv1.JobFailed)); f != (st.CompletionTime != nil) {
				t.Errorf("failed %v, completion time %v", f, st.CompletionTime)
			}
		})
	}
}
