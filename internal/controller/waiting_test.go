package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
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
	initWaits := pod(tfv1.ReplicaTypeWorker, 0).Waiting("PodInitializing", "").Obj()
	initWaits.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "agent", Image: "reg/tfk8s-agent:1", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}}
	finished := job().Obj()
	finished.Status.Conditions = append(slices.Clone(succeeded.Status.Conditions), waited.Status.Conditions...)
	suspended := job().Suspend(true).Obj()
	suspended.Status.Conditions = slices.Clone(waited.Status.Conditions)
	const noImage = "cannot pull image tensorflow/tensorflow:2.16.1" // MakePod's
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
			want: "True ImageNotPulled: worker 0 " + noImage},
		{name: "the kubelet's reason and message do not change the text", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 1).Waiting("ErrImagePull", pullMsg).Obj(),
				pod(tfv1.ReplicaTypeWorker, 0).Waiting("ImagePullBackOff", backOffMsg).Obj()},
			want: "True ImageNotPulled: worker 0-1 " + noImage},
		{name: "a missing Secret, ps first", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Waiting("InvalidImageName", "bad").Obj(),
				pod(tfv1.ReplicaTypePS, 0).Waiting("CreateContainerConfigError", secretMsg).Obj()},
			want: "True ContainerConfigInvalid: ps 0 cannot create container tensorflow; worker 0 " + noImage},
		{name: "the commonest reason", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Waiting("InvalidImageName", "bad").Obj(),
				pod(tfv1.ReplicaTypeWorker, 1).Waiting("ErrImagePull", "bad").Obj(),
				pod(tfv1.ReplicaTypePS, 0).Waiting("CreateContainerConfigError", secretMsg).Obj()},
			want: "True ImageNotPulled: ps 0 cannot create container tensorflow; worker 0-1 " + noImage},
		{name: "an init container's image", job: job().Obj(), pods: []*corev1.Pod{initWaits},
			want: "True ImageNotPulled: worker 0 cannot pull image reg/tfk8s-agent:1"},
		{name: "a crash loop is a restart, not a wait on the user", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Phase(corev1.PodRunning).Waiting("CrashLoopBackOff", "back-off 10s").Obj()}},
		{name: "a pod being deleted says nothing", job: job().Obj(),
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Deleting().Waiting("ErrImagePull", pullMsg).Obj()}},
		{name: "the image is fixed: cleared", job: waited,
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0).Phase(corev1.PodRunning).Obj()},
			want: "False WaitsCleared: no replica waits on the user any more"},
		{name: "a finished job that never waited gets no condition", job: succeeded,
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypePS, 0).Waiting("ErrImagePull", pullMsg).Obj()}},
		{name: "a finished job waits no more", job: finished,
			pods: []*corev1.Pod{pod(tfv1.ReplicaTypePS, 0).Waiting("ErrImagePull", pullMsg).Obj()},
			want: "False WaitsEnded: " + waitsEndedFinished},
		{name: "a suspended job waits no more", job: suspended,
			want: "False WaitsEnded: " + waitsEndedSuspended},
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

// TestJobFailedInTheSameReconcileWaitsNoMore: a job that decide fails (here its TF_CONFIG
// is too large to carry without the agent) while a replica waits is written Failed
// with its waits ended, not still waiting until the next reconcile.
func TestJobFailedInTheSameReconcileWaitsNoMore(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	job := testutil.MakeTFJob("j", "ml").UID("uid-j").PS(1).Workers(5000).Obj()
	job.Status.Conditions = []metav1.Condition{{Type: string(tfv1.JobReplicasWaiting), Status: metav1.ConditionTrue,
		Reason: tfv1.ReasonImageNotPulled, Message: "worker 0 cannot pull image x", LastTransitionTime: now}}
	pods := []*corev1.Pod{testutil.MakePod("j", "ml", tfv1.ReplicaTypeWorker, 0).Waiting("ErrImagePull", pullMsg).Obj()}
	r := NewTFJobReconciler(nil, nil, Options{})
	p := r.decide(&world{job: job, pods: pods, kueue: &kueueView{status: &workloadStatus{}}, now: now})
	if !isConditionTrue(p.o.status, tfv1.JobFailed) {
		t.Fatalf("conditions %v, want Failed (TF_CONFIG too large)", p.o.status.Conditions)
	}
	if diff := cmp.Diff("False WaitsEnded: "+waitsEndedFinished, waitsView(p.o.status)); diff != "" {
		t.Errorf("ReplicasWaiting (-want +got):\n%s", diff)
	}
	if fresh := newWaits(&job.Status, p.o.status, p.o.waits); len(fresh) != 0 {
		t.Errorf("a failed job announces %d waits", len(fresh))
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
	const image = "cannot pull image tensorflow/tensorflow:2.16.1"
	steps := []struct {
		pods []*corev1.Pod
		want []string
	}{
		{[]*corev1.Pod{pod(0, "ErrImagePull", pullMsg), running(1)},
			[]string{"Warning ImageNotPulled worker 0 " + image + " (pod j-worker-0, container tensorflow: ErrImagePull: " + pullMsg + ")"}},
		{[]*corev1.Pod{pod(0, "ImagePullBackOff", backOffMsg), pod(1, "CreateContainerConfigError", secretMsg)},
			[]string{"Warning ContainerConfigInvalid worker 1 cannot create container tensorflow (pod j-worker-1, container tensorflow: CreateContainerConfigError: " + secretMsg + ")"}},
		{[]*corev1.Pod{pod(0, "ErrImagePull", pullMsg), pod(1, "CreateContainerConfigError", secretMsg)}, nil},
		{[]*corev1.Pod{running(0), running(1)}, []string{"Normal WaitsCleared no replica waits on the user any more"}},
		{[]*corev1.Pod{running(0), running(1)}, nil},
		{[]*corev1.Pod{pod(0, "ErrImagePull", pullMsg), running(1)},
			[]string{"Warning ImageNotPulled worker 0 " + image + " (pod j-worker-0, container tensorflow: ErrImagePull: " + pullMsg + ")"}},
		{nil, nil}, // suspended below: the pods are gone, and the user fixed nothing
	}
	job := testutil.MakeTFJob("j", "ml").UID("uid-j").Workers(2).Obj()
	for i, s := range steps {
		if i == len(steps)-1 {
			job.Spec.RunPolicy.Suspend = ptr.To(true)
		}
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

// TestWaitEventsLargeJob: a job of 1,000 workers and a ps that cannot pull their image
// gets, for each replica type, an event for each of its first replicas, each related to
// its own pod, and one naming the rest; the status written lists every replica, so the
// next reconcile announces none again.
func TestWaitEventsLargeJob(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	job := testutil.MakeTFJob("j", "ml").UID("uid-j").PS(1).Workers(1000).Obj()
	pods := []*corev1.Pod{testutil.MakePod("j", "ml", tfv1.ReplicaTypePS, 0).Waiting("ErrImagePull", pullMsg).Obj()}
	for i := range int32(1000) {
		pods = append(pods, testutil.MakePod("j", "ml", tfv1.ReplicaTypeWorker, i).Waiting("ImagePullBackOff", backOffMsg).Obj())
	}
	r := NewTFJobReconciler(nil, nil, Options{})
	p := r.decide(&world{job: job, pods: pods, kueue: &kueueView{status: &workloadStatus{}}, now: now})
	var got []string
	for _, e := range waitEvents(&job.Status, newWaits(&job.Status, p.o.status, p.o.waits)) {
		got = append(got, e.pod.Name+" "+e.reason+" "+e.message)
	}
	const image = "cannot pull image tensorflow/tensorflow:2.16.1"
	worker := func(i int) string {
		return fmt.Sprintf("j-worker-%d ImageNotPulled worker %d %s (pod j-worker-%d, container tensorflow: ImagePullBackOff: %s)", i, i, image, i, backOffMsg)
	}
	want := []string{
		"j-ps-0 ImageNotPulled ps 0 " + image + " (pod j-ps-0, container tensorflow: ErrImagePull: " + pullMsg + ")",
		worker(0), worker(1), worker(2),
		"j-worker-3 ImageNotPulled 997 more: worker 3-999 wait for the same reason (replicaStatuses lists every one)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("True ImageNotPulled: ps 0 and worker 0-999 "+image, waitsView(p.o.status)); diff != "" {
		t.Errorf("ReplicasWaiting (-want +got):\n%s", diff)
	}
	if again := newWaits(p.o.status, p.o.status, p.o.waits); len(again) != 0 {
		t.Errorf("the same status announced %d waits again", len(again))
	}
}

// TestWaitEventsTrickle: when the kubelets' reports of a large job come in one replica
// per reconcile, the job still gets three per-replica events and one naming the rest,
// not one per replica.
func TestWaitEventsTrickle(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	job := testutil.MakeTFJob("j", "ml").UID("uid-j").Workers(40).Obj()
	r := NewTFJobReconciler(nil, nil, Options{})
	var pods []*corev1.Pod
	var got []string
	for i := range int32(40) {
		pods = append(pods, testutil.MakePod("j", "ml", tfv1.ReplicaTypeWorker, i).Waiting("ErrImagePull", pullMsg).Obj())
		p := r.decide(&world{job: job, pods: pods, kueue: &kueueView{status: &workloadStatus{}}, now: now})
		for _, e := range waitEvents(&job.Status, newWaits(&job.Status, p.o.status, p.o.waits)) {
			got = append(got, e.pod.Name+": "+strings.SplitN(e.message, " (", 2)[0])
		}
		job.Status = *p.o.status.DeepCopy()
	}
	want := []string{
		"j-worker-0: worker 0 cannot pull image tensorflow/tensorflow:2.16.1",
		"j-worker-1: worker 1 cannot pull image tensorflow/tensorflow:2.16.1",
		"j-worker-2: worker 2 cannot pull image tensorflow/tensorflow:2.16.1",
		"j-worker-3: 1 more: worker 3 wait for the same reason",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events over 40 reconciles (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("True ImageNotPulled: worker 0-39 cannot pull image tensorflow/tensorflow:2.16.1", waitsView(&job.Status)); diff != "" {
		t.Errorf("ReplicasWaiting (-want +got):\n%s", diff)
	}
}

// TestWaitsMessage: the condition names every waiting replica compactly, and counts
// those past its length rather than leaving them out unsaid.
func TestWaitsMessage(t *testing.T) {
	w := func(typ tfv1.ReplicaType, i int32, image string) replicaWait {
		return replicaWait{key: ReplicaKey{Type: typ, Index: i}, reason: tfv1.ReasonImageNotPulled, wait: tfjob.Wait{Image: image}}
	}
	var scattered, manyImages []replicaWait
	for i := int32(0); i < 1000; i += 2 {
		scattered = append(scattered, w(tfv1.ReplicaTypeWorker, i, "x:1"))
	}
	for i := range int32(40) {
		manyImages = append(manyImages, w(tfv1.ReplicaTypeWorker, i, fmt.Sprintf("reg.example.com/team/image-%02d:1", i)))
	}
	cases := []struct {
		name  string
		waits []replicaWait
		want  string
	}{
		{"ranges", []replicaWait{w(tfv1.ReplicaTypeWorker, 0, "x:1"), w(tfv1.ReplicaTypeWorker, 1, "x:1"), w(tfv1.ReplicaTypeWorker, 3, "x:1"),
			w(tfv1.ReplicaTypePS, 0, "y:1")}, "worker 0-1,3 cannot pull image x:1; ps 0 cannot pull image y:1"},
		{"scattered indexes", scattered,
			"worker 0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40,... (500 replicas) cannot pull image x:1"},
		{"too many images: the rest counted", manyImages[:20], ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := waitsMessage(tc.waits)
			if tc.want == "" {
				if len(got) > maxMessageLength || !strings.HasSuffix(got, " more replicas wait") {
					t.Errorf("message of %d bytes %q; want at most %d ending with the count of the rest", len(got), got, maxMessageLength)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}
