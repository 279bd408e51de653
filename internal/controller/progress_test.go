package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func TestDecideProgress(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(30 * time.Second))
	loss := []tfjob.LiveMetric{{Name: "train/epoch_loss", Value: "0.25"}}
	running := &tfv1.TrainingProgress{Step: 100, TotalSteps: ptr.To[int64](400), ProgressPercentage: ptr.To[int32](25),
		EstimatedRemainingSeconds: ptr.To[int32](150), StepsPerSecond: "2",
		Metrics: []tfv1.ProgressMetric{{Name: "train/epoch_loss", Value: "0.25"}}, LastUpdatedTime: t0}
	cases := []struct {
		name string
		prev *tfv1.TrainingProgress
		lp   *tfjob.LiveProgress
		want *tfv1.TrainingProgress
	}{
		{name: "nothing read keeps nothing", want: nil},
		{name: "nothing read keeps what was", prev: running, want: running},
		{
			name: "a known total gives the percentage and the time left at the rate",
			lp:   &tfjob.LiveProgress{Step: 100, TotalSteps: 400, StepsPerSecond: 2, Metrics: loss},
			want: &tfv1.TrainingProgress{Step: 100, TotalSteps: ptr.To[int64](400), ProgressPercentage: ptr.To[int32](25),
				EstimatedRemainingSeconds: ptr.To[int32](150), StepsPerSecond: "2",
				Metrics: []tfv1.ProgressMetric{{Name: "train/epoch_loss", Value: "0.25"}}, LastUpdatedTime: t1},
		},
		{
			name: "the same report again is no change, and keeps its time",
			prev: running,
			lp:   &tfjob.LiveProgress{Step: 100, TotalSteps: 400, StepsPerSecond: 2, Metrics: loss},
			want: running,
		},
		{
			name: "an unknown total gives the step and the rate alone",
			lp:   &tfjob.LiveProgress{Step: 7, StepsPerSecond: 0.123456},
			want: &tfv1.TrainingProgress{Step: 7, StepsPerSecond: "0.1235", LastUpdatedTime: t1},
		},
		{
			name: "no rate yet: no time left",
			lp:   &tfjob.LiveProgress{Step: 1, TotalSteps: 3},
			want: &tfv1.TrainingProgress{Step: 1, TotalSteps: ptr.To[int64](3), ProgressPercentage: ptr.To[int32](33), LastUpdatedTime: t1},
		},
		{
			name: "past the total: 100% and nothing left",
			lp:   &tfjob.LiveProgress{Step: 500, TotalSteps: 400, StepsPerSecond: 5},
			want: &tfv1.TrainingProgress{Step: 500, TotalSteps: ptr.To[int64](400), ProgressPercentage: ptr.To[int32](100),
				EstimatedRemainingSeconds: ptr.To[int32](0), StepsPerSecond: "5", LastUpdatedTime: t1},
		},
		{
			name: "hostile figures are clamped or dropped",
			lp: &tfjob.LiveProgress{Step: -5, TotalSteps: math.MaxInt64, StepsPerSecond: math.NaN(), Metrics: []tfjob.LiveMetric{
				{Name: "ok", Value: "1e400"}, {Name: "", Value: "1"}, {Name: "bad\x1b[2J", Value: "1"},
				{Name: strings.Repeat("n", 129), Value: "1"}, {Name: "words", Value: "rm -rf"}, {Name: "nan", Value: "NaN"},
			}},
			want: &tfv1.TrainingProgress{Step: 0, Metrics: []tfv1.ProgressMetric{{Name: "nan", Value: "NaN"}}, LastUpdatedTime: t1},
		},
		{
			name: "a crawl of a huge total caps the time left",
			lp:   &tfjob.LiveProgress{Step: 0, TotalSteps: 1 << 50, StepsPerSecond: 1e-9},
			want: &tfv1.TrainingProgress{Step: 0, TotalSteps: ptr.To[int64](1 << 50), ProgressPercentage: ptr.To[int32](0),
				EstimatedRemainingSeconds: ptr.To[int32](math.MaxInt32), StepsPerSecond: "0.000000001", LastUpdatedTime: t1},
		},
		{
			name: "a fast rate without an exponent",
			lp:   &tfjob.LiveProgress{Step: 1, StepsPerSecond: 12345.6},
			want: &tfv1.TrainingProgress{Step: 1, StepsPerSecond: "12350", LastUpdatedTime: t1},
		},
		{
			name: "a rate under a step in 30 years is none",
			lp:   &tfjob.LiveProgress{Step: 1, TotalSteps: 2, StepsPerSecond: 5e-324},
			want: &tfv1.TrainingProgress{Step: 1, TotalSteps: ptr.To[int64](2), ProgressPercentage: ptr.To[int32](50), LastUpdatedTime: t1},
		},
		{
			name: "the fastest rate believed",
			lp:   &tfjob.LiveProgress{Step: 1, StepsPerSecond: math.Inf(1)},
			want: &tfv1.TrainingProgress{Step: 1, StepsPerSecond: "1000000000", LastUpdatedTime: t1},
		},
		{
			name: "no more than eight metrics",
			lp:   &tfjob.LiveProgress{Step: 1, Metrics: nineMetrics()},
			want: &tfv1.TrainingProgress{Step: 1, Metrics: eightOfNine(), LastUpdatedTime: t1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decideProgress(tc.prev, tc.lp, t1)); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
		})
	}
}

func nineMetrics() []tfjob.LiveMetric {
	var m []tfjob.LiveMetric
	for i := range 9 {
		m = append(m, tfjob.LiveMetric{Name: string(rune('a' + i)), Value: "1"})
	}
	return m
}

func eightOfNine() []tfv1.ProgressMetric {
	var m []tfv1.ProgressMetric
	for i := range 8 {
		m = append(m, tfv1.ProgressMetric{Name: string(rune('a' + i)), Value: "1"})
	}
	return m
}

func TestFinishedProgressDropsRateAndETA(t *testing.T) {
	p := &tfv1.TrainingProgress{Step: 400, TotalSteps: ptr.To[int64](400), ProgressPercentage: ptr.To[int32](100),
		EstimatedRemainingSeconds: ptr.To[int32](0), StepsPerSecond: "5"}
	want := &tfv1.TrainingProgress{Step: 400, TotalSteps: ptr.To[int64](400), ProgressPercentage: ptr.To[int32](100)}
	if diff := cmp.Diff(want, finishedProgress(p)); diff != "" {
		t.Errorf("finished progress (-want +got):\n%s", diff)
	}
	if p.StepsPerSecond != "5" {
		t.Error("finishedProgress changed the status it was given")
	}
}

func TestFetchLiveProgressTreatsTheBodyAsUntrusted(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		body    string
		want    *tfjob.LiveProgress
		wantErr string
	}{
		{name: "a report", status: 200, body: `{"step":3,"totalSteps":9,"stepsPerSecond":1.5}`,
			want: &tfjob.LiveProgress{Step: 3, TotalSteps: 9, StepsPerSecond: 1.5}},
		{name: "nothing read yet", status: 204, want: nil},
		{name: "a refusal", status: 401, wantErr: "401"},
		{name: "not JSON", status: 200, body: "<html>", wantErr: "invalid character"},
		{name: "too long", status: 200, body: `{"metrics":[` + strings.Repeat(`{"name":"x","value":"1"},`, 2000) + `]}`,
			wantErr: "body over 16384 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var auth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				auth = r.Header.Get("Authorization")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			got, err := fetchLiveProgress(context.Background(), progressClient, srv.URL+tfjob.ProgressPath, "uid-1")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
			if auth != "Bearer uid-1" {
				t.Errorf("Authorization %q, want the pod's UID as the bearer token", auth)
			}
		})
	}
}

// TestProgressSource checks which pod is polled, on whole pods and on the pods the
// cache holds (stripPod), which must decide the same.
func TestProgressSource(t *testing.T) {
	job := testutil.MakeTFJob("j", "ns").Chief().Workers(2).Obj()
	job.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://bucket/x", Paths: []string{"/ckpt"}}
	pod := func(rt tfv1.ReplicaType, index string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + strings.ToLower(string(rt)) + index, UID: "u",
			Labels: map[string]string{tfv1.LabelReplicaType: strings.ToLower(string(rt)), tfv1.LabelReplicaIndex: index}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow",
				Env: []corev1.EnvVar{{Name: tfjob.EnvProgressPort, Value: "2230"}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3"}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	cases := []struct {
		name    string
		pods    []*corev1.Pod
		wantPod string
		wantURL string
	}{
		{name: "the chief, not worker 0", pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, "0", nil), pod(tfv1.ReplicaTypeChief, "0", nil)},
			wantPod: "p-chief0", wantURL: "http://10.1.2.3:2230/progress"},
		{name: "a pending chief: none", pods: []*corev1.Pod{pod(tfv1.ReplicaTypeChief, "0", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })}},
		{name: "a chief without the port: none", pods: []*corev1.Pod{pod(tfv1.ReplicaTypeChief, "0", func(p *corev1.Pod) { p.Spec.Containers[0].Env = nil })}},
		{name: "a chief on the host's network: none", pods: []*corev1.Pod{pod(tfv1.ReplicaTypeChief, "0", func(p *corev1.Pod) { p.Spec.HostNetwork = true })}},
		{name: "a port the user chose: none", pods: []*corev1.Pod{pod(tfv1.ReplicaTypeChief, "0", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: tfjob.EnvProgressPort, Value: "10250"})
		})}},
		{name: "the last of the variable counts", pods: []*corev1.Pod{pod(tfv1.ReplicaTypeChief, "0", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append([]corev1.EnvVar{{Name: tfjob.EnvProgressPort, Value: "10250"}}, p.Spec.Containers[0].Env...)
		})}, wantPod: "p-chief0", wantURL: "http://10.1.2.3:2230/progress"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stripped []*corev1.Pod
			for _, p := range tc.pods {
				s, err := stripPod(p.DeepCopy())
				if err != nil {
					t.Fatal(err)
				}
				stripped = append(stripped, s.(*cachedPod).pod())
			}
			for kind, pods := range map[string][]*corev1.Pod{"whole": tc.pods, "cached": stripped} {
				got, url := progressSource(job, pods)
				name := ""
				if got != nil {
					name = got.Name
				}
				if name != tc.wantPod || url != tc.wantURL {
					t.Errorf("progressSource on %s pods = %q, %q; want %q, %q", kind, name, url, tc.wantPod, tc.wantURL)
				}
			}
		})
	}
	hostChief := job.DeepCopy()
	hostChief.Spec.TFReplicaSpecs[tfv1.ReplicaTypeChief].Template.Spec.HostNetwork = true
	if got, _ := progressSource(hostChief, []*corev1.Pod{pod(tfv1.ReplicaTypeChief, "0", nil)}); got != nil {
		t.Errorf("progressSource polls %s, whose template is on the host's network", got.Name)
	}
}

func TestProgressPollDoesNotHoldTheReconcile(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		entered <- struct{}{}
		<-release // never answers while the test runs
	}))
	defer srv.Close()
	defer close(release)
	// Every poll, whatever the pod's address, reaches the silent server.
	c := &http.Client{Timeout: progressTimeout, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", srv.Listener.Addr().String())
	}}}

	job, pod := progressJob("ns")
	job.UID = "job-1"
	st := &tfv1.TFJobStatus{}
	start := time.Now()
	r, now := &TFJobReconciler{polls: newProgressPoller(c, 1, 1)}, metav1.Now()
	wait := r.syncProgress(context.Background(), job, r.planProgress(job, []*corev1.Pod{pod}, st, r.polls.peek(job.UID, now.Time), now), now)
	if took := time.Since(start); took > progressTimeout/4 {
		t.Errorf("syncProgress took %v with the pod silent, want it not to wait on the poll (timeout %v)", took, progressTimeout)
	}
	if wait != progressInterval {
		t.Errorf("syncProgress asked to come back in %v, want %v, when the next poll is due (the answer notifies)", wait, progressInterval)
	}
	select {
	case <-entered: // the poll was made, on the poller, and is blocked still
	case <-time.After(10 * time.Second):
		t.Fatal("the job was never polled")
	}
}

func TestProgressPollBacksOff(t *testing.T) {
	for failures, want := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute} {
		if got := progressBackoff(failures); got != want {
			t.Errorf("progressBackoff(%d) = %v, want %v", failures, got, want)
		}
	}
	p := newProgressPoller(nil, 0, 1) // no pollers: the test plays their part
	ctx, t0 := context.Background(), time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	// take plays a reconcile's part: observe peeks, and act asks for a poll when due.
	take := func(at time.Duration) time.Duration {
		if v := p.peek("a", t0.Add(at)); v.wait > 0 {
			return v.wait
		}
		return p.ask(ctx, "a", pollRequest{url: "http://10.1.2.3:2230/progress"}, t0.Add(at))
	}
	polled := func() bool {
		select {
		case <-p.queue:
			return true
		default:
			return false
		}
	}
	fail := errors.New("i/o timeout")
	steps := []struct {
		at       time.Duration
		answer   bool // the poll queued by this step fails
		wantWait time.Duration
		wantPoll bool
	}{
		{at: 0, answer: true, wantWait: progressInterval, wantPoll: true},
		{at: 30 * time.Second, wantWait: 30 * time.Second}, // one failure: 60 s from the poll
		{at: time.Minute, answer: true, wantWait: time.Minute, wantPoll: true},
		{at: 2 * time.Minute, wantWait: time.Minute}, // two: 120 s
		{at: 3 * time.Minute, wantWait: 2 * time.Minute, wantPoll: true},
		{at: 5 * time.Minute, wantWait: 2 * time.Minute}, // due, but still in flight: not queued twice
	}
	for i, s := range steps {
		wait := take(s.at)
		got := polled()
		if wait != s.wantWait || got != s.wantPoll {
			t.Errorf("step %d at +%v: wait %v, polled %v; want %v, %v", i, s.at, wait, got, s.wantWait, s.wantPoll)
		}
		if got && s.answer {
			p.done("a", nil, fail)
		}
	}
	p.done("a", &tfjob.LiveProgress{Step: 1}, nil) // an answer ends the backoff
	if wait := take(5*time.Minute + progressInterval); wait != progressInterval || !polled() {
		t.Errorf("after an answer: wait %v, want %v and a poll", wait, progressInterval)
	}
}

func TestProgressPollSkipsWhenTheQueueIsFull(t *testing.T) {
	p := newProgressPoller(nil, 0, 1)
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	p.ask(context.Background(), "a", pollRequest{}, now)
	p.ask(context.Background(), "b", pollRequest{}, now) // the queue is full: b waits its next turn
	if len(p.queue) != 1 || p.jobs["b"].inFlight {
		t.Fatalf("queue %d long, b in flight %v; want a alone queued", len(p.queue), p.jobs["b"].inFlight)
	}
	<-p.queue
	p.done("a", &tfjob.LiveProgress{Step: 5}, nil)
	if lp := p.peek("a", now.Add(time.Second)).last; lp == nil || lp.Step != 5 {
		t.Errorf("took %v, want the polled step 5", lp)
	}
	// A reading whose status write was deferred is there for the next reconcile.
	if lp := p.peek("a", now.Add(2*time.Second)).last; lp == nil || lp.Step != 5 {
		t.Errorf("took %v again, want the step 5 kept until the next poll replaces it", lp)
	}
	if v := p.peek("b", now.Add(progressInterval)); v.wait != 0 {
		t.Errorf("b at its next turn: due in %v, want now", v.wait)
	}
	if wait := p.ask(context.Background(), "b", pollRequest{}, now.Add(progressInterval)); wait != progressInterval || len(p.queue) != 1 {
		t.Errorf("b at its next turn: wait %v, queue %d; want %v and b queued", wait, len(p.queue), progressInterval)
	}
}

// TestProgressAnswerNotifies: a poll's answer asks for the job's reconcile at once, so
// that its status shows the reading without a timed requeue, and the reading stays.
func TestProgressAnswerNotifies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"step": 7}`)
	}))
	defer srv.Close()
	p := newProgressPoller(srv.Client(), 1, 1)
	notified := make(chan types.NamespacedName, 1)
	job := types.NamespacedName{Namespace: "ns", Name: "j"}
	p.ask(context.Background(), "uid-j", pollRequest{url: srv.URL, job: job, notify: func(n types.NamespacedName) { notified <- n }}, time.Now())
	select {
	case got := <-notified:
		if got != job {
			t.Errorf("notified %v, want %v", got, job)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the answer never asked for the job's reconcile")
	}
	if lp := p.peek("uid-j", time.Now()).last; lp == nil || lp.Step != 7 {
		t.Errorf("kept %v, want step 7", lp)
	}
}

func TestRunningStepRates(t *testing.T) {
	running := metav1.Condition{Type: string(tfv1.JobRunning), Status: metav1.ConditionTrue, Reason: tfv1.ReasonRunning}
	succeeded := metav1.Condition{Type: string(tfv1.JobSucceeded), Status: metav1.ConditionTrue, Reason: "TFJobSucceeded"}
	job := func(name, rate string, conds ...metav1.Condition) *tfv1.TFJob {
		j := testutil.MakeTFJob(name, "ns").Workers(1).Obj()
		j.Status.Conditions = conds
		if rate != "" {
			j.Status.Progress = &tfv1.TrainingProgress{Step: 1, StepsPerSecond: rate}
		}
		return j
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		job("fast", "12.5", running), job("done", "3", running, succeeded), job("quiet", "", running),
		job("garbled", "Inf", running), job("starting", "")).Build()
	got, err := runningStepRates(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	want := []jobStepRate{{"ns", "fast", 12.5}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(jobStepRate{})); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}

// TestNotifyProgressQueuesTheJob: an answer queues the job's reconcile by its name, and
// a full channel drops the notice rather than hold the poller (the job's next turn
// writes the answer).
func TestNotifyProgressQueuesTheJob(t *testing.T) {
	ch := make(chan event.GenericEvent, 1)
	notify := notifyProgress(ch)
	notify(types.NamespacedName{Namespace: "ns", Name: "a"})
	done := make(chan struct{})
	go func() {
		notify(types.NamespacedName{Namespace: "ns", Name: "b"}) // full: dropped
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("notifying on a full channel blocked")
	}
	got := <-ch
	if got.Object.GetNamespace() != "ns" || got.Object.GetName() != "a" {
		t.Errorf("queued %s/%s, want ns/a", got.Object.GetNamespace(), got.Object.GetName())
	}
	if len(ch) != 0 {
		t.Errorf("%d more notices queued, want the second dropped", len(ch))
	}
}

func TestProgressPollQueuesAReconcileOnlyForANewReading(t *testing.T) {
	p := newProgressPoller(nil, 0, 1)
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	steps := []struct {
		name string
		lp   *tfjob.LiveProgress
		err  error
		want bool
	}{
		{name: "first reading", lp: &tfjob.LiveProgress{Step: 5}, want: true},
		{name: "the same reading", lp: &tfjob.LiveProgress{Step: 5}},
		{name: "a failed poll", err: errors.New("i/o timeout")},
		{name: "the same reading after a failure", lp: &tfjob.LiveProgress{Step: 5}},
		{name: "a later step", lp: &tfjob.LiveProgress{Step: 6}, want: true},
		{name: "a new metric", lp: &tfjob.LiveProgress{Step: 6, Metrics: []tfjob.LiveMetric{{Name: "loss", Value: "0.5"}}}, want: true},
		{name: "the same metric", lp: &tfjob.LiveProgress{Step: 6, Metrics: []tfjob.LiveMetric{{Name: "loss", Value: "0.5"}}}},
		{name: "no reading served", lp: nil},
	}
	for _, s := range steps {
		p.ask(context.Background(), "a", pollRequest{}, now)
		<-p.queue
		if got := p.done("a", s.lp, s.err); got != s.want {
			t.Errorf("%s: done = %v, want %v (true queues a reconcile)", s.name, got, s.want)
		}
	}
}

// progressJob is a job of a chief whose pod serves its progress, and that pod, running
// at 10.1.2.3.
func progressJob(ns string) (*tfv1.TFJob, *corev1.Pod) {
	job := testutil.MakeTFJob("j", ns).Chief().Obj()
	job.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://bucket/x", Paths: []string{"/ckpt"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "j-chief-0", UID: "u",
		Labels: map[string]string{tfv1.LabelReplicaType: "chief", tfv1.LabelReplicaIndex: "0"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow",
			Env: []corev1.EnvVar{{Name: tfjob.EnvProgressPort, Value: strconv.Itoa(tfjob.ProgressPort)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3"}}
	return job, pod
}
