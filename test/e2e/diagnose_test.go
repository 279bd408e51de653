package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Tail lengths of what diagnose prints.
const (
	componentLogLines = 40
	containerLogLines = 15
	eventsShown       = 60
)

// diagnose prints what explains a failed test on the local cluster in dir: every pod
// with its phase, reason, deletion, node and container states, the cluster's latest
// events, and, with components, the last lines of each component's log and of each
// container's. Every e2e test calls it when it fails (upForTest at cleanup, the waits
// at their timeout).
func diagnose(t *testing.T, kubeconfig, dir string, components bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "=== diagnosis of the local cluster in %s at %s\n", dir, time.Now().Format(time.TimeOnly))
	writePods(ctx, &b, kubeconfig)
	writeEvents(ctx, &b, kubeconfig)
	if components {
		logs, _ := filepath.Glob(filepath.Join(dir, "cluster", "*.log"))
		for _, l := range logs {
			fmt.Fprintf(&b, "--- last %d lines of %s\n%s", componentLogLines, l, tail(l, componentLogLines))
		}
		containers, _ := filepath.Glob(filepath.Join(dir, "node", "logs", "*", "*", "*.log"))
		for _, l := range containers {
			fmt.Fprintf(&b, "--- last %d lines of container log %s\n%s", containerLogLines, strings.TrimPrefix(l, dir+"/"), tail(l, containerLogLines))
		}
	}
	t.Log(b.String())
}

// writePods writes one paragraph per pod: its phase and why, and each container's state.
func writePods(ctx context.Context, b *strings.Builder, kubeconfig string) {
	cs, err := newClientset(kubeconfig)
	if err != nil {
		fmt.Fprintf(b, "pods: %v\n", err)
		return
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(b, "pods: %v\n", err)
		return
	}
	fmt.Fprintf(b, "--- %d pods\n", len(pods.Items))
	for _, p := range pods.Items {
		fmt.Fprintf(b, "%s/%s uid %s node %q phase %s", p.Namespace, p.Name, p.UID, p.Spec.NodeName, p.Status.Phase)
		if p.Status.Reason != "" {
			fmt.Fprintf(b, " reason %s: %s", p.Status.Reason, p.Status.Message)
		}
		if p.DeletionTimestamp != nil {
			fmt.Fprintf(b, " deleting since %s (grace %ds) finalizers %v", p.DeletionTimestamp.Format(time.TimeOnly), ptrOr(p.DeletionGracePeriodSeconds), p.Finalizers)
		}
		b.WriteString("\n")
		for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			fmt.Fprintf(b, "    %s restarts %d: %s\n", s.Name, s.RestartCount, containerState(s.State))
		}
	}
}

// writeEvents writes the cluster's latest events, oldest first.
func writeEvents(ctx context.Context, b *strings.Builder, kubeconfig string) {
	cs, err := newClientset(kubeconfig)
	if err != nil {
		return
	}
	events, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(b, "events: %v\n", err)
		return
	}
	items := events.Items
	sort.Slice(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
	if len(items) > eventsShown {
		items = items[len(items)-eventsShown:]
	}
	fmt.Fprintf(b, "--- last %d of %d events\n", len(items), len(events.Items))
	for _, e := range items {
		fmt.Fprintf(b, "%s %s %s/%s %s: %s (x%d, %s)\n", eventTime(e).Format(time.TimeOnly), e.Type,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, max(e.Count, 1), e.Source.Component)
	}
}

// eventTime is when an event last happened.
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// containerState says what a container is doing.
func containerState(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.Format(time.TimeOnly)
	case s.Terminated != nil:
		return fmt.Sprintf("terminated %s, exit code %d, at %s: %s", s.Terminated.Reason, s.Terminated.ExitCode,
			s.Terminated.FinishedAt.Format(time.TimeOnly), strings.TrimSpace(s.Terminated.Message))
	case s.Waiting != nil:
		return fmt.Sprintf("waiting %s: %s", s.Waiting.Reason, s.Waiting.Message)
	}
	return "unknown"
}

// tail is the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error() + "\n"
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n"))) + "\n"
}

func ptrOr(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
