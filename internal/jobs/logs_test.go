package jobs

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/logline"
)

func TestLineWriterPrefixesWholeLines(t *testing.T) {
	var buf bytes.Buffer
	lw := &LineWriter{W: &buf}
	// Two replicas write at once: every line stays whole and carries its prefix.
	var wg sync.WaitGroup
	for _, r := range []string{"worker-0", "worker-1"} {
		wg.Go(func() {
			var in strings.Builder
			for range 200 {
				in.WriteString("step of " + r + "\n")
			}
			in.WriteString("no final newline from " + r)
			if err := lw.copyLines(r, strings.NewReader(in.String())); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 402 {
		t.Fatalf("got %d lines, want 402", len(lines))
	}
	for _, l := range lines {
		ok := l == "[worker-0] step of worker-0" || l == "[worker-1] step of worker-1" ||
			l == "[worker-0] no final newline from worker-0" || l == "[worker-1] no final newline from worker-1"
		if !ok {
			t.Fatalf("mangled line %q", l)
		}
	}
}

// TestLineWriterSplitsLongLines: a line longer than 64 KiB comes out in pieces of at
// most 64 KiB, each marked as continuing but the last, and nothing is lost.
func TestLineWriterSplitsLongLines(t *testing.T) {
	var buf bytes.Buffer
	lw := &LineWriter{W: &buf}
	long := strings.Repeat("0123456789", 20<<10) // 200 KiB
	if err := lw.copyLines("worker-0", strings.NewReader(long+"\nafter\n")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	var joined strings.Builder
	for i, l := range lines[:len(lines)-1] {
		text, ok := strings.CutPrefix(l, "[worker-0] ")
		if !ok || len(text) > logline.Max+len(logline.Mark) {
			t.Fatalf("line %d: %d bytes, prefix %v", i, len(l), ok)
		}
		if last := i == len(lines)-2; strings.HasSuffix(text, logline.Mark) == last {
			t.Errorf("line %d of %d: marked as continuing %v", i, len(lines)-1, !last)
		}
		joined.WriteString(strings.TrimSuffix(text, logline.Mark))
	}
	if len(lines) != 5 || joined.String() != long || lines[4] != "[worker-0] after" {
		t.Errorf("%d lines, the long one rejoined whole %v, last %q", len(lines), joined.String() == long, lines[len(lines)-1])
	}
}

// TestLineWriterJSON: with JSON each line is one object of its own line, the text
// whole, quotes and all, and a piece of a long line marked as continuing.
func TestLineWriterJSON(t *testing.T) {
	var buf bytes.Buffer
	lw := &LineWriter{W: &buf, JSON: true}
	long := strings.Repeat("x", logline.Max+10)
	if err := lw.copyLines("worker-0", strings.NewReader("loss=\"0.5\"\t{}\n"+long)); err != nil {
		t.Fatal(err)
	}
	var got []LogLine
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var l LogLine
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if len(got) != 3 || got[0] != (LogLine{Replica: "worker-0", Text: "loss=\"0.5\"\t{}"}) {
		t.Fatalf("got %d lines, first %+v; want 3, the first whole", len(got), got[0])
	}
	if !strings.HasSuffix(got[1].Text, logline.Mark) || strings.TrimSuffix(got[1].Text, logline.Mark)+got[2].Text != long {
		t.Errorf("the long line's pieces do not rejoin to it, or the first is not marked as continuing")
	}
}

func TestReplicaOrder(t *testing.T) {
	got := []string{"worker-10", "ps-1", "evaluator-0", "worker-2", "chief-0", "ps-0", "worker-0"}
	slices.SortFunc(got, CompareReplicas)
	want := []string{"chief-0", "ps-0", "ps-1", "worker-0", "worker-2", "worker-10", "evaluator-0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sorted replicas (-want +got):\n%s", diff)
	}

	job := &tfv1.TFJob{Spec: tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
		tfv1.ReplicaTypeWorker: {Replicas: ptr.To[int32](2)},
		tfv1.ReplicaTypePS:     {Replicas: ptr.To[int32](1)},
		tfv1.ReplicaTypeChief:  {},
	}}}
	if diff := cmp.Diff([]string{"chief-0", "ps-0", "worker-0", "worker-1"}, Replicas(job)); diff != "" {
		t.Errorf("Replicas (-want +got):\n%s", diff)
	}
	l := &Logs{Replica: "worker-1"}
	if diff := cmp.Diff([]string{"worker-1"}, l.wanted(Replicas(job))); diff != "" {
		t.Errorf("wanted (-want +got):\n%s", diff)
	}
}

func TestHasLogs(t *testing.T) {
	cases := []struct {
		node  string
		phase corev1.PodPhase
		want  bool
	}{
		{"", corev1.PodPending, false},
		{"node-1", corev1.PodPending, false},
		{"node-1", corev1.PodRunning, true},
		{"node-1", corev1.PodFailed, true},
		{"", corev1.PodFailed, false}, // never scheduled: no kubelet has its logs
	}
	for _, tc := range cases {
		pod := &corev1.Pod{Spec: corev1.PodSpec{NodeName: tc.node}, Status: corev1.PodStatus{Phase: tc.phase}}
		if got := hasLogs(pod); got != tc.want {
			t.Errorf("hasLogs(node %q, %s) = %t, want %t", tc.node, tc.phase, got, tc.want)
		}
	}
}
