package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// podRun is one pod of a replica, as the watch saw it last.
type podRun struct {
	uid     types.UID
	created time.Time
	phase   corev1.PodPhase
}

// recorder watches every pod and TFJob of the namespace for the whole run, through the
// API server's restarts (an informer lists again after a broken watch).
type recorder struct {
	mu        sync.Mutex
	runs      map[string]map[types.UID]*podRun // by "<job>/<replica>"
	jobs      map[string]*tfv1.TFJob           // the latest of each
	terminal  map[string]tfv1.JobState         // the first terminal state seen
	succeeded map[string]int32                 // by "<job>/<type>": the highest count seen
	back      []string
}

// record starts watching; it stops with ctx.
func (c *cluster) record(ctx context.Context, t *testing.T) *recorder {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme.New(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{runs: map[string]map[types.UID]*podRun{}, jobs: map[string]*tfv1.TFJob{},
		terminal: map[string]tfv1.JobState{}, succeeded: map[string]int32{}}
	for _, w := range []struct {
		obj client.Object
		h   toolscache.ResourceEventHandlerFuncs
	}{
		{&corev1.Pod{}, toolscache.ResourceEventHandlerFuncs{AddFunc: r.pod, UpdateFunc: func(_, obj any) { r.pod(obj) }, DeleteFunc: r.pod}},
		{&tfv1.TFJob{}, toolscache.ResourceEventHandlerFuncs{AddFunc: r.job, UpdateFunc: func(_, obj any) { r.job(obj) }}},
	} {
		inf, err := informers.GetInformer(ctx, w.obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := inf.AddEventHandler(w.h); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("the recorder's watches did not sync")
	}
	return r
}

// pod records a pod's state.
func (r *recorder) pod(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Labels[tfv1.LabelJobName] == "" {
		return
	}
	key := p.Labels[tfv1.LabelJobName] + "/" + p.Labels[tfv1.LabelReplicaType] + "-" + p.Labels[tfv1.LabelReplicaIndex]
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs[key] == nil {
		r.runs[key] = map[types.UID]*podRun{}
	}
	run := r.runs[key][p.UID]
	if run == nil {
		run = &podRun{uid: p.UID, created: p.CreationTimestamp.Time}
		r.runs[key][p.UID] = run
	}
	if p.Status.Phase != "" && run.phase != corev1.PodSucceeded && run.phase != corev1.PodFailed {
		run.phase = p.Status.Phase
	}
}

// job records a job's status, and any step back from what was seen before.
func (r *recorder) job(obj any) {
	j, ok := obj.(*tfv1.TFJob)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev := r.jobs[j.Name]; prev != nil && prev.UID != j.UID {
		return // not one of the run's jobs
	}
	r.jobs[j.Name] = j
	if first := r.terminal[j.Name]; first != "" && !meta.IsStatusConditionTrue(j.Status.Conditions, string(first)) {
		r.back = append(r.back, fmt.Sprintf("job %s was %s, then %q (resourceVersion %s)", j.Name, first, j.Status.State, j.ResourceVersion))
	}
	for _, s := range []tfv1.JobState{tfv1.JobSucceeded, tfv1.JobFailed} {
		if meta.IsStatusConditionTrue(j.Status.Conditions, string(s)) && r.terminal[j.Name] == "" {
			r.terminal[j.Name] = s
		}
	}
	for rt, rs := range j.Status.ReplicaStatuses {
		key := j.Name + "/" + string(rt)
		if rs.Succeeded < r.succeeded[key] {
			r.back = append(r.back, fmt.Sprintf("job %s: %s succeeded went from %d to %d", j.Name, rt, r.succeeded[key], rs.Succeeded))
		}
		r.succeeded[key] = max(r.succeeded[key], rs.Succeeded)
	}
}

// state is a job's state as last seen.
func (r *recorder) state(name string) tfv1.JobState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j := r.jobs[name]; j != nil {
		return j.Status.State
	}
	return ""
}

// conditions renders a job's conditions as last seen.
func (r *recorder) conditions(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	j := r.jobs[name]
	if j == nil {
		return "never seen"
	}
	var parts []string
	for _, c := range j.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}

// destination is a job's artifacts destination.
func (r *recorder) destination(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j := r.jobs[name]; j != nil && j.Spec.Artifacts != nil {
		return j.Spec.Artifacts.Destination
	}
	return ""
}

// runOf returns the run of the job name as last seen, the first 8 hex digits of its
// UID, under which its replicas store; "" if it was never seen.
func (r *recorder) runOf(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j := r.jobs[name]; j != nil {
		return tfjob.RunID(string(j.UID))
	}
	return ""
}

// replicas returns each replica's pods in the order they were created.
func (r *recorder) replicas() map[string][]podRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]podRun{}
	for key, runs := range r.runs {
		for _, run := range runs {
			out[key] = append(out[key], *run)
		}
		slices.SortFunc(out[key], func(a, b podRun) int { return a.created.Compare(b.created) })
	}
	return out
}

// backwards lists every step back seen.
func (r *recorder) backwards() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.back)
}

// formatRuns renders a replica's pods.
func formatRuns(runs []podRun) string {
	var parts []string
	for _, run := range runs {
		parts = append(parts, fmt.Sprintf("%s created %s: %s", run.uid, run.created.Format(time.TimeOnly), run.phase))
	}
	return strings.Join(parts, "; ")
}
