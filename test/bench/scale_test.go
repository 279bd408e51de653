package bench

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// What the scale scenarios create, what their pods weigh as stored, and where the
// benchmark keeps its last results.

// agentJob is one TFJob of 1 PS and workers workers, run by the agent (it keeps
// artifacts): its pods carry the constant-size cluster in place of TF_CONFIG.
func agentJob(name, ns string, workers int32) *tfv1.TFJob {
	return testutil.MakeTFJob(name, ns).PS(1).Workers(workers).Artifacts("s3://bench/runs", "/model").Obj()
}

// bytesPerPod is the mean size of the pods in namespace ns as the API server stores them
// (their protobuf encoding, read back, managed fields and status included), and how
// many there are.
func (r *rig) bytesPerPod(ns string) (float64, int) {
	list := &corev1.PodList{}
	if err := r.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		r.b.Fatal(err)
	}
	total := 0
	for i := range list.Items {
		total += list.Items[i].Size()
	}
	if len(list.Items) == 0 {
		return 0, 0
	}
	return float64(total) / float64(len(list.Items)), len(list.Items)
}

// inlineBytesPerPod is the mean size of the pods of job built without the agent, as
// tfk8s wrote every pod before the cluster was stored once per job: TF_CONFIG inline.
func inlineBytesPerPod(b *testing.B, job *tfv1.TFJob) float64 {
	job = job.DeepCopy()
	job.Spec.Artifacts, job.Spec.Storage = nil, nil
	pods := constructPods(b, job)
	total := 0
	for _, pod := range pods {
		total += pod.Size()
	}
	return float64(total) / float64(len(pods))
}

// writeReport replaces the section titled title (a "## " heading) of the Markdown file
// $TFK8S_BENCH_REPORT with body, or appends it, so that each benchmark keeps its own
// last results there (make bench names docs/benchmarks.md). Unset, it does nothing.
func writeReport(b testing.TB, title, body string) {
	path := os.Getenv("TFK8S_BENCH_REPORT")
	if path == "" {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		b.Fatal(err)
	}
	doc := string(data)
	if doc == "" {
		doc = "# Benchmarks\n\nThe last results of `make bench`, on the machine it ran on. Each section is rewritten by its benchmark.\n"
	}
	section := "## " + title + "\n\n" + strings.TrimSpace(body) + "\n"
	old := regexp.MustCompile(`(?ms)^## ` + regexp.QuoteMeta(title) + `\n.*?(^## |\z)`)
	if loc := old.FindStringSubmatchIndex(doc); loc != nil {
		doc = doc[:loc[0]] + section + "\n" + doc[loc[2]:]
		doc = strings.TrimRight(doc, "\n") + "\n"
	} else {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("results written to %s\n", path)
}

// TestWriteReport checks that a benchmark's section of the report is replaced in place,
// the other sections kept, and that a new section is appended.
func TestWriteReport(t *testing.T) {
	path := t.TempDir() + "/benchmarks.md"
	t.Setenv("TFK8S_BENCH_REPORT", path)
	writeReport(t, "Pod creation", "first")
	writeReport(t, "Controller memory", "memory")
	writeReport(t, "Pod creation", "second")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\nThe last results of `make bench`, on the machine it ran on. Each section is rewritten by its benchmark.\n" +
		"\n## Pod creation\n\nsecond\n\n## Controller memory\n\nmemory\n"
	if string(got) != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}
