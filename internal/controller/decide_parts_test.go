package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestDecideServices: each Service of the job that the cache does not hold is
// created; an earlier job's of the name is deleted; another's holds the name, and
// the plan says whose.
func TestDecideServices(t *testing.T) {
	job := testutil.MakeTFJob("j", "team").UID("uid-j").PS(1).Workers(1).Obj()
	perReplica := job.DeepCopy()
	perReplica.SetGroupVersionKind(kubeflowv1.GroupVersion.WithKind("TFJob"))
	perReplica.Annotations = map[string]string{kubeflowv1.AnnotationTrainingOperatorServices: "true"}
	svc := func(name string, owner *tfv1.TFJob, uid string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"}}
		if owner != nil {
			gvk := owner.GroupVersionKind()
			if gvk.Empty() {
				gvk = tfv1.GroupVersion.WithKind("TFJob")
			}
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: gvk.GroupVersion().String(), Kind: "TFJob", Name: owner.Name,
				UID: owner.UID, Controller: ptr.To(true)}}
			if uid != "" {
				s.OwnerReferences[0].UID = k8stypes.UID("uid-" + uid)
			}
		}
		return s
	}
	type result struct {
		Create          []string
		Remove, TakenBy string
	}
	cases := []struct {
		name string
		job  *tfv1.TFJob
		v    serviceView
		want result
	}{
		{name: "none yet", job: job, want: result{Create: []string{"j"}}},
		{name: "its own", job: job, v: serviceView{headless: svc("j", job, "")}},
		{name: "an earlier job's of the name", job: job, v: serviceView{headless: svc("j", job, "old")}, want: result{Remove: "j"}},
		{name: "another's", job: job, v: serviceView{headless: svc("j", nil, "")},
			want: result{TakenBy: "Service team/j already exists and belongs to no owner, not to this TFJob: the job's pods take their DNS names " +
				"from a Service of the job's name; delete that Service or submit the job under another name"}},
		{name: "per replica, none yet", job: perReplica, want: result{Create: []string{"j", "j-ps-0", "j-worker-0"}}},
		{name: "per replica, one there", job: perReplica, v: serviceView{headless: svc("j", perReplica, ""),
			replicas: []*corev1.Service{svc("j-ps-0", perReplica, ""), nil}}, want: result{Create: []string{"j-worker-0"}}},
		{name: "per replica, one another's", job: perReplica, v: serviceView{headless: svc("j", perReplica, ""),
			replicas: []*corev1.Service{svc("j-ps-0", nil, ""), nil}},
			want: result{TakenBy: "Service team/j-ps-0 already exists and does not belong to this TFJob, which asks for a Service per replica " +
				"(annotation " + kubeflowv1.AnnotationTrainingOperatorServices + "): delete that Service or submit the job under another name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := decideServices(tc.job, tc.v)
			got := result{TakenBy: p.takenBy}
			for _, s := range p.create {
				got.Create = append(got.Create, s.Name)
			}
			if p.remove != nil {
				got.Remove = p.remove.Name
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decideServices (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideGang: a job with a gang scheduler gets its group object in the version
// served, and is refused, naming the field, when none is.
func TestDecideGang(t *testing.T) {
	job := testutil.MakeTFJob("j", "team").Workers(2).Obj()
	type result struct {
		Group, Refused string
	}
	cases := []struct {
		name string
		v    gangView
		want result
	}{
		{name: "no gang scheduler"},
		{name: "served", v: gangView{provider: tfv1.GangProviderVolcano, version: "v1beta1"}, want: result{Group: "*v1beta1.PodGroup j"}},
		{name: "not served", v: gangView{provider: tfv1.GangProviderVolcano},
			want: result{Refused: `gang scheduler "volcano" (runPolicy.schedulingPolicy.provider or the controller's --gang-scheduler) is not available: ` +
				"the API server does not serve PodGroup scheduling.volcano.sh/v1beta1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			group, refused := decideGang(job, tc.v)
			got := result{Refused: refused}
			if group != nil {
				got.Group = fmt.Sprintf("%T %s", group, group.GetName())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decideGang (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRetryEvents: a failed replica's re-creation is announced once, while its pod
// still carries the finalizer that counts the failure; a disruption is not a failure.
func TestRetryEvents(t *testing.T) {
	pod := func(name string, finalizer bool, reason string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason}}
		if finalizer {
			p.Finalizers = []string{tfv1.TrackingFinalizer}
		}
		return p
	}
	cases := []struct {
		name    string
		retries []retry
		want    []jobEvent
	}{
		{name: "none"},
		{name: "counted failure", retries: []retry{{pod: pod("j-worker-0", true, "OOMKilled"), failures: 2, left: 19600 * time.Millisecond}},
			want: []jobEvent{{eventType: corev1.EventTypeNormal, reason: tfv1.ReasonRetryBackoff,
				message: "pod j-worker-0 failed (OOMKilled); re-creating it in 20s (failure 2 in a row)"}}},
		{name: "already announced", retries: []retry{{pod: pod("j-worker-0", false, "OOMKilled"), failures: 2}}},
		{name: "a disruption", retries: []retry{{pod: pod("j-worker-0", true, "Evicted")}}},
		{name: "no exit code", retries: []retry{{pod: pod("j-ps-0", true, ""), failures: 1}},
			want: []jobEvent{{eventType: corev1.EventTypeNormal, reason: tfv1.ReasonRetryBackoff,
				message: "pod j-ps-0 failed (no exit code); re-creating it in 0s (failure 1 in a row)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, retryEvents(tc.retries), cmp.AllowUnexported(jobEvent{})); diff != "" {
				t.Errorf("retryEvents (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanProgress: a running job's lead pod is polled when due, its last reading put
// into the status; a finished job's poller entry is forgotten and its rate dropped;
// a job with no pod to poll, or a Kubeflow job, plans nothing.
func TestPlanProgress(t *testing.T) {
	job, lead := progressJob("team")
	now := metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	rated := &tfv1.TrainingProgress{Step: 4, StepsPerSecond: "2"}
	finished := func() *tfv1.TFJobStatus {
		return &tfv1.TFJobStatus{Progress: rated, Conditions: []metav1.Condition{{Type: string(tfv1.JobSucceeded), Status: metav1.ConditionTrue}}}
	}
	type result struct {
		Forget   bool
		PollURL  string
		Wait     time.Duration
		Progress *tfv1.TrainingProgress
	}
	cases := []struct {
		name     string
		kubeflow bool
		pods     []*corev1.Pod
		st       *tfv1.TFJobStatus
		v        progressView
		want     result
	}{
		{name: "due", pods: []*corev1.Pod{lead}, st: &tfv1.TFJobStatus{}, v: progressView{last: &tfjob.LiveProgress{Step: 7}},
			want: result{PollURL: "http://10.1.2.3:2230/progress", Progress: &tfv1.TrainingProgress{Step: 7, LastUpdatedTime: now}}},
		{name: "not due", pods: []*corev1.Pod{lead}, st: &tfv1.TFJobStatus{}, v: progressView{wait: 10 * time.Second},
			want: result{Wait: 10 * time.Second}},
		{name: "no pod to poll", st: &tfv1.TFJobStatus{}, v: progressView{last: &tfjob.LiveProgress{Step: 7}}},
		{name: "finished", pods: []*corev1.Pod{lead}, st: finished(), want: result{Forget: true, Progress: &tfv1.TrainingProgress{Step: 4}}},
		{name: "kubeflow", kubeflow: true, pods: []*corev1.Pod{lead}, st: &tfv1.TFJobStatus{}, v: progressView{last: &tfjob.LiveProgress{Step: 7}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &TFJobReconciler{kubeflow: tc.kubeflow}
			p := r.planProgress(job, tc.pods, tc.st, tc.v, now)
			got := result{Forget: p.forget, Wait: p.wait, Progress: tc.st.Progress}
			if p.poll != nil {
				got.PollURL = p.poll.url
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("planProgress (-want +got):\n%s", diff)
			}
		})
	}
}
