package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A trace of one round, from the CLI's first line to each command's first: the
// benchmark's clock when each step of submit ended (Env.Trace), and when a watch of the
// round's pods first saw each pod created, bound to the node, past its init container
// and Running. The kubelet reports a pod's status some time after the fact, so a
// watch's times are late by that much; the commands' and the agent's own times are
// not: the command prints time.time() first, and containerd stamps the agent's lines.

// milestone is one row of a trace: a step's name, and its time from the round's start.
type milestone struct {
	name string
	at   time.Duration
}

// podTimes are the times a watch first saw each of a pod's milestones.
type podTimes struct{ created, scheduled, initDone, running time.Time }

// roundTrace collects one round's trace.
type roundTrace struct {
	start  time.Time
	prefix string
	mu     sync.Mutex
	cli    []milestone
	pods   map[string]*podTimes
	// events holds when the watch got each Event of the round's pods, by a row name
	// of its reason and container: the scheduler's binding, the kubelet's pulls,
	// creations and starts.
	events map[string][]time.Time
	done   sync.WaitGroup
}

// startTrace watches the pods selector selects and the Events of pods named prefix…,
// from now until stop: the round's clock starts here.
func startTrace(ctx context.Context, b *testing.B, cs *kubernetes.Clientset, selector, prefix string) (*roundTrace, func()) {
	ctx, cancel := context.WithCancel(ctx)
	pods, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		b.Fatalf("watching the pods of %s: %v", selector, err)
	}
	events, err := cs.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatalf("watching the events of %s: %v", selector, err)
	}
	t := &roundTrace{start: time.Now(), prefix: prefix, pods: map[string]*podTimes{}, events: map[string][]time.Time{}}
	t.done.Go(func() {
		for ev := range pods.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				t.saw(pod, time.Now())
			}
		}
	})
	t.done.Go(func() {
		for ev := range events.ResultChan() {
			if e, ok := ev.Object.(*corev1.Event); ok {
				t.sawEvent(e, time.Now())
			}
		}
	})
	return t, func() { pods.Stop(); events.Stop(); cancel(); t.done.Wait() }
}

// sawEvent notes an Event of one of the round's pods, once.
func (t *roundTrace) sawEvent(e *corev1.Event, now time.Time) {
	if e.InvolvedObject.Kind != "Pod" || !strings.HasPrefix(e.InvolvedObject.Name, t.prefix) || e.Count > 1 {
		return
	}
	name := "event " + e.Reason
	if _, c, ok := strings.Cut(e.InvolvedObject.FieldPath, "{"); ok {
		name += " " + strings.TrimSuffix(c, "}")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events[name] = append(t.events[name], now)
}

// cliStep is a cli.Tracer: it notes when each step of submit ended.
func (t *roundTrace) cliStep(step string, _ time.Time, _ time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cli = append(t.cli, milestone{"CLI: " + step + " done", time.Since(t.start)})
}

// saw notes the milestones pod has reached that were not seen before.
func (t *roundTrace) saw(pod *corev1.Pod, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pods[pod.Name]
	if p == nil {
		p = &podTimes{created: now}
		t.pods[pod.Name] = p
	}
	if p.scheduled.IsZero() && pod.Spec.NodeName != "" {
		p.scheduled = now
	}
	if p.initDone.IsZero() && len(pod.Status.InitContainerStatuses) > 0 && pod.Status.InitContainerStatuses[0].State.Terminated != nil {
		p.initDone = now
	}
	if p.running.IsZero() && pod.Status.Phase == corev1.PodRunning {
		p.running = now
	}
}

// rows is the round's trace: the CLI's steps, then for each pod milestone the first
// and the last pod to reach it, then the agent's and the commands' starts (agent, by
// pod, is when containerd logged the agent's "starting" line).
func (t *roundTrace) rows(agent, started map[string]time.Time) []milestone {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := slices.Clone(t.cli)
	span := func(name string, at func(*podTimes) time.Time) {
		var ts []time.Time
		for _, p := range t.pods {
			if v := at(p); !v.IsZero() {
				ts = append(ts, v)
			}
		}
		out = append(out, spanRows(name, ts, t.start)...)
	}
	span("pod created (watch)", func(p *podTimes) time.Time { return p.created })
	span("pod bound to the node (watch)", func(p *podTimes) time.Time { return p.scheduled })
	span("init container done (watch)", func(p *podTimes) time.Time { return p.initDone })
	out = append(out, spanRows("agent's \"starting\" line (containerd)", slices.Collect(maps.Values(agent)), t.start)...)
	out = append(out, spanRows("command started (its own clock)", slices.Collect(maps.Values(started)), t.start)...)
	span("pod Running (watch)", func(p *podTimes) time.Time { return p.running })
	for name, ts := range t.events {
		out = append(out, spanRows(name, ts, t.start)...)
	}
	// A timeline: the CLI's steps first, as they ran, then the rest by time.
	slices.SortStableFunc(out[len(t.cli):], func(a, b milestone) int { return cmp.Compare(a.at, b.at) })
	return out
}

// spanRows are the first and the last of ts, from start, as two rows; none if ts is
// empty, as for the raw pods' init containers.
func spanRows(name string, ts []time.Time, start time.Time) []milestone {
	if len(ts) == 0 {
		return nil
	}
	slices.SortFunc(ts, time.Time.Compare)
	return []milestone{{name + ", first", ts[0].Sub(start)}, {name + ", last", ts[len(ts)-1].Sub(start)}}
}

// agentStarts reads, from the logs of the pods selector selects, when containerd got
// the agent's "starting" line: the agent has claimed the attempt, fetched and restored,
// and is about to start the command. Pods without the agent have none.
func agentStarts(ctx context.Context, cs *kubernetes.Clientset, selector string) map[string]time.Time {
	out := map[string]time.Time{}
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return out
	}
	for _, p := range pods.Items {
		log, err := cs.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{Timestamps: true}).DoRaw(ctx)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(log)) {
			stamp, text, _ := strings.Cut(line, " ")
			if !strings.HasPrefix(text, "tfk8s-agent: ") || !strings.Contains(text, " starting ") {
				continue
			}
			if at, err := time.Parse(time.RFC3339Nano, stamp); err == nil {
				out[p.Name] = at
			}
			break
		}
	}
	return out
}

// traceTable is the median of each row over the rounds of A and of B, side by side,
// rows matched by name and ordered by A's median, else B's.
func traceTable(a, b [][]milestone) string {
	var names []string
	for _, rows := range append(slices.Clone(a), b...) {
		for _, r := range rows {
			if !slices.Contains(names, r.name) {
				names = append(names, r.name)
			}
		}
	}
	at := func(name string) float64 {
		if ms, ok := medianAt(a, name); ok {
			return ms
		}
		ms, _ := medianAt(b, name)
		return ms
	}
	slices.SortStableFunc(names, func(x, y string) int { return cmp.Compare(at(x), at(y)) })
	cell := func(rounds [][]milestone, name string) string {
		if ms, ok := medianAt(rounds, name); ok {
			return fmt.Sprintf("%.0f", ms)
		}
		return ""
	}
	var s strings.Builder
	s.WriteString("| step (ms from the round's start; medians) | (A) tfk8s submit | (B) raw pods |\n|---|---:|---:|\n")
	for _, n := range names {
		fmt.Fprintf(&s, "| %s | %s | %s |\n", n, cell(a, n), cell(b, n))
	}
	return s.String()
}

// medianAt is the median, over rounds, of the row named name, in ms; false if no round
// has it.
func medianAt(rounds [][]milestone, name string) (float64, bool) {
	var ms []float64
	for _, rows := range rounds {
		for _, r := range rows {
			if r.name == name {
				ms = append(ms, r.at.Seconds()*1000)
			}
		}
	}
	if len(ms) == 0 {
		return 0, false
	}
	slices.Sort(ms)
	return ms[len(ms)/2], true
}
