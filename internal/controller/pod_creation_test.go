package controller

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

func TestSlowStartBatches(t *testing.T) {
	tests := []struct {
		n, width, first int
		want            []span
	}{
		{0, 32, 1, nil},
		{1, 32, 1, []span{{0, 1}}},
		{4, 32, 1, []span{{0, 1}, {1, 3}, {3, 4}}},
		{15, 32, 1, []span{{0, 1}, {1, 3}, {3, 7}, {7, 15}}},
		{20, 32, 1, []span{{0, 1}, {1, 3}, {3, 7}, {7, 15}, {15, 20}}},
		{20, 4, 1, []span{{0, 1}, {1, 3}, {3, 20}}},
		{10_000, 32, 1, []span{{0, 1}, {1, 3}, {3, 7}, {7, 15}, {15, 31}, {31, 10_000}}},
		{3, 1, 1, []span{{0, 3}}},
		{6, 32, 6, []span{{0, 6}}},
		{32, 32, 32, []span{{0, 32}}},
		{6, 32, 0, []span{{0, 1}, {1, 3}, {3, 6}}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d by %d from %d", tc.n, tc.width, tc.first), func(t *testing.T) {
			if diff := cmp.Diff(tc.want, slowStartBatches(tc.n, tc.width, tc.first), cmp.AllowUnexported(span{})); diff != "" {
				t.Errorf("slowStartBatches(%d, %d, %d) (-want +got):\n%s", tc.n, tc.width, tc.first, diff)
			}
		})
	}
}

func TestFirstBatch(t *testing.T) {
	tests := []struct {
		name          string
		n, width      int
		refusedLately bool
		want          int
	}{
		{"a small job, nothing refused: one batch", 6, 32, false, 6},
		{"as wide as the fan-out: one batch", 32, 32, false, 32},
		{"wider than the fan-out: slow start", 33, 32, false, 1},
		{"its namespace refused lately: slow start", 6, 32, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstBatch(tc.n, tc.width, tc.refusedLately); got != tc.want {
				t.Errorf("firstBatch(%d, %d, %v) = %d, want %d", tc.n, tc.width, tc.refusedLately, got, tc.want)
			}
		})
	}
}

// TestRefusedLately: a refusal marks its namespace, not others, for createBackoffMax.
func TestRefusedLately(t *testing.T) {
	var b creationBackoff
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if b.refusedLately("ns", now) {
		t.Error("a namespace never refused: refused lately")
	}
	b.refused(testutil.MakeTFJob("big", "ns").UID("uid-big").Obj(), now)
	for _, tc := range []struct {
		ns    string
		after time.Duration
		want  bool
	}{
		{"ns", 0, true},
		{"other", 0, false},
		{"ns", createBackoffMax - time.Second, true},
		{"ns", createBackoffMax, false},
		{"ns", 0, false}, // forgotten once it expired
	} {
		if got := b.refusedLately(tc.ns, now.Add(tc.after)); got != tc.want {
			t.Errorf("refusedLately(%s) %v after the refusal = %v, want %v", tc.ns, tc.after, got, tc.want)
		}
	}
}

func TestRefusalMessage(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	quota := "exceeded quota: q, requested: pods=1, used: pods=10, limited: pods=10"
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"quota", apierrors.NewForbidden(pods, "w-10", errors.New(quota)), `pods "w-10" is forbidden: ` + quota},
		{"wrapped", fmt.Errorf("creating pod w-10: %w", apierrors.NewForbidden(pods, "w-10", errors.New("violates PodSecurity"))),
			`pods "w-10" is forbidden: violates PodSecurity`},
		{"invalid template", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "w-0", field.ErrorList{field.Required(field.NewPath("spec"), "")}),
			`Pod "w-0" is invalid: spec: Required value`},
		{"quota in a conflict", apierrors.NewConflict(pods, "w-10", errors.New(quota)),
			`Operation cannot be fulfilled on pods "w-10": ` + quota},
		{"server error", apierrors.NewInternalError(errors.New("etcd")), ""},
		{"timeout", apierrors.NewServerTimeout(pods, "create", 1), ""},
		{"not from the API server", errors.New("connection refused"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := refusalMessage(tc.err); got != tc.want {
				t.Errorf("refusalMessage = %q, want %q", got, tc.want)
			}
		})
	}
}

// quotaClient is a fake API server whose namespace holds at most limit pods; it counts
// the pod creations it was sent.
type quotaClient struct {
	client.WithWatch
	limit, posts atomic.Int32
	// mu makes counting and creating one step, as the API server's quota admission is.
	mu sync.Mutex
	// refuse, when set, is what every creation gets instead.
	refuse error
}

func newQuotaClient(limit int32) *quotaClient {
	q := &quotaClient{}
	q.limit.Store(limit)
	q.WithWatch = interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.New()).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Pod); !ok {
				return c.Create(ctx, obj, opts...)
			}
			q.posts.Add(1)
			if q.refuse != nil {
				return q.refuse
			}
			q.mu.Lock()
			defer q.mu.Unlock()
			list := &corev1.PodList{}
			if err := c.List(ctx, list); err != nil {
				return err
			}
			if int32(len(list.Items)) >= q.limit.Load() {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, obj.GetName(),
					fmt.Errorf("exceeded quota: q, requested: pods=1, used: pods=%d, limited: pods=%d", len(list.Items), q.limit.Load()))
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	return q
}

// createMissing runs the act step that creates the pods the plan finds missing, and
// records what the API server said in o.status, as a reconcile does.
func createMissing(ctx context.Context, r *TFJobReconciler, job *tfv1.TFJob, o *observation) (time.Duration, error) {
	now := metav1.NewTime(r.clock.Now())
	out, wait, err := r.startPods(ctx, job, r.planStart(job, o, &world{refusals: r.readRefusals(job, now.Time)}, now.Time))
	recordStart(o.status, out, now)
	return wait, err
}

// TestRefusedPodsSlowStartAndBackOff: a job of 100 workers under a quota of 10 pods
// sends its pods in batches of 1, 2, 4, 8 and stops at the refusal, which becomes the
// PodCreationRefused condition with the API server's message; it is tried again only
// after a delay that doubles, one pod at a time, and once the quota is raised every pod
// is created and the condition turns False.
func TestRefusedPodsSlowStartAndBackOff(t *testing.T) {
	ctx := context.Background()
	c := newQuotaClient(10)
	r := NewTFJobReconciler(c, nil, Options{})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r.clock = clk
	job := testutil.MakeTFJob("big", "ns").UID("uid-big").Workers(100).Obj()

	// try observes the job's pods, creates those missing with the status as last
	// written, and writes the status back, as a reconcile does.
	try := func() (posts int32, wait time.Duration, o *observation) {
		t.Helper()
		pods, _, _, err := r.listPods(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		o = observePods(job, pods, metav1.NewTime(clk.Now()))
		before := c.posts.Load()
		wait, err = createMissing(ctx, r, job, o)
		if err != nil {
			t.Fatalf("creating the missing pods: %v", err)
		}
		job.Status = *o.status
		return c.posts.Load() - before, wait, o
	}
	refused := func(o *observation) *metav1.Condition { return findCondition(o.status, tfv1.JobPodCreationRefused) }

	posts, wait, o := try()
	// Batches 1, 2 and 4 get through (7 pods); the batch of 8 meets the quota after 3.
	if posts < 11 || posts > 15 || o.status.ReplicaStatuses[tfv1.ReplicaTypeWorker].Active != 10 {
		t.Errorf("first try: %d creations, %d pods; want 11 to 15 creations (batches 1+2+4+8, stopped at the refusal) and 10 pods",
			posts, o.status.ReplicaStatuses[tfv1.ReplicaTypeWorker].Active)
	}
	cond := refused(o)
	// Which pod of the batch of 8 met the quota first varies.
	wantMsg := regexp.MustCompile(`^pods "big-worker-([7-9]|1[0-4])" is forbidden: exceeded quota: q, requested: pods=1, used: pods=10, limited: pods=10$`)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != tfv1.ReasonPodCreationFailed || !wantMsg.MatchString(cond.Message) || wait != time.Second {
		t.Errorf("after the refusal: condition %+v, next try in %v; want True, %s, %s, in 1s", cond, wait, tfv1.ReasonPodCreationFailed, wantMsg)
	}

	if posts, wait, _ := try(); posts != 0 || wait != time.Second {
		t.Errorf("before the delay ends: %d creations, next try in %v; want none, in 1s", posts, wait)
	}
	for _, delay := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		clk.Step(delay)
		if posts, wait, _ := try(); posts != 1 || wait != 2*delay {
			t.Errorf("after %v: %d creations, next try in %v; want 1, in %v", delay, posts, wait, 2*delay)
		}
	}

	c.limit.Store(1000)
	clk.Step(8 * time.Second)
	posts, wait, o = try()
	cond = refused(o)
	want := metav1.Condition{Type: string(tfv1.JobPodCreationRefused), Status: metav1.ConditionFalse, Reason: tfv1.ReasonPodsCreated,
		Message: "the API server accepts the job's pods again: 90 created", LastTransitionTime: metav1.NewTime(clk.Now())}
	if diff := cmp.Diff(&want, cond); posts != 90 || wait != 0 || diff != "" {
		t.Errorf("quota raised: %d creations, next try in %v; want 90, none; condition (-want +got):\n%s", posts, wait, diff)
	}
}

// TestPodCreationErrors: a refusal of any pod (Pod Security, an invalid template) sets
// the condition as a quota does; an error of the API server stops the batches as well,
// but is returned for the work queue to retry, and sets no condition.
func TestPodCreationErrors(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name          string
		err           error
		wantCondition bool
		wantErr       bool
	}{
		{"Pod Security", apierrors.NewForbidden(pods, "big-worker-0", errors.New(`violates PodSecurity "restricted:latest"`)), true, false},
		{"invalid template", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "big-worker-0", field.ErrorList{field.Required(field.NewPath("spec"), "")}), true, false},
		{"server error", apierrors.NewInternalError(errors.New("etcd leader changed")), false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newQuotaClient(1000)
			c.refuse = tc.err
			r := NewTFJobReconciler(c, nil, Options{})
			job := testutil.MakeTFJob("big", "ns").UID("uid-big").Workers(100).Obj()
			o := observePods(job, nil, metav1.Now())
			wait, err := createMissing(context.Background(), r, job, o)
			if posts := c.posts.Load(); posts != 1 {
				t.Errorf("%d creations, want 1: the first batch failed", posts)
			}
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, want one: %v", err, tc.wantErr)
			}
			cond := findCondition(o.status, tfv1.JobPodCreationRefused)
			if got := cond != nil && cond.Status == metav1.ConditionTrue; got != tc.wantCondition || got != (wait > 0) {
				t.Errorf("condition %+v, next try in %v; want the condition and a delay: %v", cond, wait, tc.wantCondition)
			}
			if tc.wantCondition && cond.Message != refusalMessage(tc.err) {
				t.Errorf("condition message %q, want the API server's %q", cond.Message, refusalMessage(tc.err))
			}
		})
	}
}
