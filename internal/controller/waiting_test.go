package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// waitsView is the ReplicasWaiting condition in words a table can hold; "" for none.
func waitsView(st *tfv1.TFJobStatus) string {
	c := findCondition(st, tfv1.JobReplicasWaiting)
	if c == nil {
		return ""
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

const (
	pullMsg    = `failed to pull and unpack image "reg/tfk8s/no-such-image:0.0.0": not found`
	backOffMsg = `Back-off pulling image "reg/tfk8s/no-such-image:0.0.0": ErrImagePull: not found`
	secretMsg  = `secret "s3" not found`
)

// TestDecideReplicasWaiting: decide names, in the ReplicasWaiting condition, each
// replica whose container waits for what only the user can fix, and clears it once
// none does; a failing program, a container on its way and a finished job add nothing.
func TestDecideReplicasWaiting(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	job := func() *testutil.TFJobWrapper { return testutil.MakeTFJob("j", "ml").UID("uid-j").PS(1).Workers(2) }
	pod := func(rt tfv1.ReplicaType, i int32) *testutil.PodWrapper { return testutil.MakePod("j", "ml", rt, i) }
	waited := job().Obj()
	waited.Status.Conditions = []metav1.Condition{{Type: string(tfv1.JobReplicasWaiting), Status: metav1.ConditionTrue,
		Reason: tfv1.ReasonImageNotPulled, Message: "worker 0 cannot pull its image (...)", LastTransitionTime: now}}
	succeeded := job().Obj()
	succeeded.Status.Conditions = []metav1.Condition{{Type: string(tfv1.JobSucceeded), Status: metav1.ConditionTrue, Reason: "Earlier"}}
	long := strings.Repeat("x", 400)
	initWaits := pod(tfv1.ReplicaTypeWorker, 0).Waiting("PodInitializing", "").Obj()
	initWaits.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "agent", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}}
	cases := []struct {
		name string
		job  *tfv1.TFJob
		pods []*corev1.Pod
		want string
	}{
		{name: "pods on their way: no condition", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Waiting("ContainerCreating", "").Obj(), pod(tfv1.ReplicaTypePS, 0).Obj()}},
		{name: "an image that cannot be pulled", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Waiting("ErrImagePull", pullMsg).Obj()},
			want: "True ImageNotPulled: worker 0 cannot pull its image (pod j-worker-0, container tensorflow: ErrImagePull: " + pullMsg + ")"},
		{name: "the first wait carries the kubelet's message, the others their reason", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 1).Waiting("ErrImagePull", pullMsg).Obj(),
				pod(tfv1.ReplicaTypeWorker, 0).Waiting("ImagePullBackOff", backOffMsg).Obj()},
			want: "True ImageNotPulled: worker 0 cannot pull its image (pod j-worker-0, container tensorflow: ImagePullBackOff: " + backOffMsg + "); " +
				"worker 1 cannot pull its image (pod j-worker-1, container tensorflow: ErrImagePull)"},
		{name: "a missing Secret, ps first", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Waiting("InvalidImageName", "bad").Obj(),
				pod(tfv1.ReplicaTypePS, 0).Waiting("CreateContainerConfigError", secretMsg).Obj()},
			want: "True ContainerConfigInvalid: ps 0 cannot create its container (pod j-ps-0, container tensorflow: CreateContainerConfigError: " + secretMsg + "); " +
				"worker 0 cannot pull its image (pod j-worker-0, container tensorflow: InvalidImageName)"},
		{name: "an init container's image", job: job().Obj(), pods: []*corev1.Pod{initWaits},
			want: "True ImageNotPulled: worker 0 cannot pull its image (pod j-worker-0, container agent: ErrImagePull: not found)"},
		{name: "a long kubelet message is cut", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Waiting("ErrImagePull", long).Obj()},
			want: "True ImageNotPulled: worker 0 cannot pull its image (pod j-worker-0, container tensorflow: ErrImagePull: " + long[:waitDetailLength-3] + "...)"},
		{name: "a crash loop is a restart, not a wait on the user", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Phase(corev1.PodRunning).Waiting("CrashLoopBackOff", "back-off 10s").Obj()}},
		{name: "a pod being deleted says nothing", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Deleting().Waiting("ErrImagePull", pullMsg).Obj()}},
		{name: "the image is fixed: cleared", job: waited,
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Phase(corev1.PodRunning).Obj()},
			want: "False WaitsCleared: no replica waits on the user any more"},
		{name: "a finished job is left as it ended", job: succeeded,
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypePS, 0).Waiting("ErrImagePull", pullMsg).Obj()}},
	}
	r := NewTFJobReconciler(nil, nil, Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := r.decide(&world{job: tc.job, pods: tc.pods, kueue: &kueueView{status: &workloadStatus{}}, now: now})
			if diff := cmp.Diff(tc.want, waitsView(p.o.status)); diff != "" {
				t.Errorf("ReplicasWaiting (-want +got):\n%s", diff)
			}
			if p.o.status.State == tfv1.JobFailed {
				t.Errorf("the job failed; waits must not fail it")
			}
		})
	}
}

// TestAnnounceWaits: across reconciles, each replica is announced once per reason while
// it waits, however the kubelet's reason turns between ErrImagePull and
// ImagePullBackOff; the end of the waits is announced, and a new wait after it again.
func TestAnnounceWaits(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	pod := func(i int32, reason, msg string) *corev1.Pod {
		return testutil.MakePod("j", "ml", tfv1.ReplicaTypeWorker, i).Waiting(reason, msg).Obj()
	}
	running := func(i int32) *corev1.Pod {
		return testutil.MakePod("j", "ml", tfv1.ReplicaTypeWorker, i).Phase(corev1.PodRunning).Obj()
	}
	steps := []struct {
		pods []*corev1.Pod
		want []string
	}{
		{[]*corev1.Pod{pod(0, "ErrImagePull", pullMsg), running(1)},
			[]string{"Warning ImageNotPulled worker 0 cannot pull its image (pod j-worker-0, container tensorflow: ErrImagePull: " + pullMsg + ")"}},
		{[]*corev1.Pod{pod(0, "ImagePullBackOff", backOffMsg), pod(1, "CreateContainerConfigError", secretMsg)},
			[]string{"Warning ContainerConfigInvalid worker 1 cannot create its container (pod j-worker-1, container tensorflow: CreateContainerConfigError: " + secretMsg + ")"}},
		{[]*corev1.Pod{pod(0, "ErrImagePull", pullMsg), pod(1, "CreateContainerConfigError", secretMsg)}, nil},
		{[]*corev1.Pod{running(0), running(1)}, []string{"Normal WaitsCleared no replica waits on the user any more"}},
		{[]*corev1.Pod{running(0), running(1)}, nil},
		{[]*corev1.Pod{pod(0, "ErrImagePull", pullMsg), running(1)},
			[]string{"Warning ImageNotPulled worker 0 cannot pull its image (pod j-worker-0, container tensorflow: ErrImagePull: " + pullMsg + ")"}},
	}
	job := testutil.MakeTFJob("j", "ml").UID("uid-j").Workers(2).Obj()
	for i, s := range steps {
		rec := events.NewFakeRecorder(10)
		r := NewTFJobReconciler(nil, rec, Options{})
		p := r.decide(&world{job: job, pods: s.pods, kueue: &kueueView{status: &workloadStatus{}}, now: now})
		r.announceWaits(job, &job.Status, p.o.status, p.o.waits)
		var got []string
		for len(rec.Events) > 0 {
			got = append(got, <-rec.Events)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("step %d: events (-want +got):\n%s", i, diff)
		}
		job = job.DeepCopy()
		job.Status = *p.o.status // as written
	}
}

// TestUnsaidWaitsCutMessage: replicas cut from a long condition message are not
// announced, so that the same reconcile repeated announces nothing.
func TestUnsaidWaitsCutMessage(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	job := testutil.MakeTFJob("j", "ml").UID("uid-j").Workers(40).Obj()
	var pods []*corev1.Pod
	for i := range int32(40) {
		pods = append(pods, testutil.MakePod("j", "ml", tfv1.ReplicaTypeWorker, i).Waiting("ErrImagePull", pullMsg).Obj())
	}
	r := NewTFJobReconciler(nil, nil, Options{})
	p := r.decide(&world{job: job, pods: pods, kueue: &kueueView{status: &workloadStatus{}}, now: now})
	after := findCondition(p.o.status, tfv1.JobReplicasWaiting)
	first := unsaidWaits(nil, after, p.o.waits)
	if len(first) == 0 || len(first) >= 40 {
		t.Fatalf("announced %d of 40 waits; want those the %d-byte message names", len(first), len(after.Message))
	}
	if again := unsaidWaits(after, after, p.o.waits); len(again) != 0 {
		t.Errorf("the same status announced %d waits again", len(again))
	}
}
