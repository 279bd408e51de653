package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// topPod is a replica's pod of job mnist with a tensorflow container of the given
// resources, beside a sidecar.
func topPod(typ, index string, res corev1.ResourceRequirements) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mnist-" + typ + "-" + index,
		Labels: map[string]string{tfv1.LabelReplicaType: typ, tfv1.LabelReplicaIndex: index}}}
	p.Spec.Containers = []corev1.Container{{Name: "sidecar"}, {Name: "tensorflow", Resources: res}}
	return p
}

// usedBy is the metrics of a pod's containers: tensorflow's and a sidecar's.
func usedBy(pod, cpu, mem string, at time.Time) metricsv1beta1.PodMetrics {
	return metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: pod}, Timestamp: metav1.NewTime(at),
		Containers: []metricsv1beta1.ContainerMetrics{
			{Name: "sidecar", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			{Name: "tensorflow", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}},
		}}
}

func TestPrintTopFromMetrics(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	sized := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	pods := []corev1.Pod{topPod("ps", "0", corev1.ResourceRequirements{}), topPod("worker", "0", sized), topPod("worker", "1", sized)}
	items := []metricsv1beta1.PodMetrics{usedBy("mnist-worker-0", "1985m", "300Mi", at), usedBy("mnist-ps-0", "10m", "20Mi", at.Add(-time.Second))}
	var out strings.Builder
	if err := printTop(&out, metricsTable("mnist", pods, items)); err != nil {
		t.Fatal(err)
	}
	want := `Source: metrics API (metrics.k8s.io): the latest figures of tfjob mnist's pods, sampled at 2026-11-29T10:00:00Z
REPLICA    CPU    CPU REQUEST   CPU LIMIT   MEMORY      MEMORY REQUEST   MEMORY LIMIT
ps-0       0.01   -             -           20.0 MiB    -                -
worker-0   1.99   500m          -           300.0 MiB   256Mi            1Gi
worker-1   <no figures yet>
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("tfk8s top from the metrics API (-want +got):\n%s", diff)
	}
}

func TestPrintTopFromRun(t *testing.T) {
	sized := corev1.Container{Name: "tensorflow", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("512Mi")},
	}}
	job := tfJob("mnist", "default", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeWorker: replica(3, sized)})
	d := &runs.Details{Run: runs.Run{Name: "mnist", Run: "0f3a9c2e", Job: job}, Manifests: []runs.Replica{
		{Name: "worker-0", Usage: &storage.Usage{CPUCoresMean: 1.93, CPUCoresPeak: 2, MemoryMeanBytes: 250 << 20, MemoryPeakBytes: 301 << 20}},
		{Name: "worker-1"},
		{Name: "worker-2", UsageErr: errors.New("reading the usage record: denied")},
	}}
	var out strings.Builder
	t1 := usageTable(d)
	t1.Note = "tfjob \"mnist\" not found in namespace \"default\""
	if err := printTop(&out, t1); err != nil {
		t.Fatal(err)
	}
	want := `Source: the agents' usage records (usage.json) of run mnist/0f3a9c2e: means and peaks of each replica's latest attempt
(not the metrics API: tfjob "mnist" not found in namespace "default")
REPLICA    CPU MEAN   CPU PEAK   CPU REQUEST   CPU LIMIT   MEMORY MEAN   MEMORY PEAK   MEMORY REQUEST   MEMORY LIMIT
worker-0   1.93       2.00       2             2           250.0 MiB     301.0 MiB     512Mi            512Mi
worker-1   <no usage record>
worker-2   <reading the usage record: denied>
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("tfk8s top from a run (-want +got):\n%s", diff)
	}
}

// A run whose agents read GPUs through NVML gets a GPU column; a replica without
// GPUs shows "-" there.
func TestPrintTopGPUs(t *testing.T) {
	gpu := []storage.GPUUsage{{Index: 0, Samples: 9, UtilizationMeanPercent: 35.4, UtilizationPeakPercent: 80, MemoryPeakBytes: 3 << 30, MemoryTotalBytes: 16 << 30}}
	d := &runs.Details{Run: runs.Run{Name: "mnist", Run: "0f3a9c2e"}, Manifests: []runs.Replica{
		{Name: "ps-0", Usage: &storage.Usage{CPUCoresMean: 0.5, CPUCoresPeak: 1, MemoryMeanBytes: 100 << 20, MemoryPeakBytes: 200 << 20}},
		{Name: "worker-0", Usage: &storage.Usage{CPUCoresMean: 1, CPUCoresPeak: 2, MemoryMeanBytes: 1 << 30, MemoryPeakBytes: 2 << 30, GPUs: gpu}},
	}}
	var out strings.Builder
	if err := printTop(&out, usageTable(d)); err != nil {
		t.Fatal(err)
	}
	want := `Source: the agents' usage records (usage.json) of run mnist/0f3a9c2e: means and peaks of each replica's latest attempt
REPLICA    CPU MEAN   CPU PEAK   CPU REQUEST   CPU LIMIT   MEMORY MEAN   MEMORY PEAK   MEMORY REQUEST   MEMORY LIMIT   GPU
ps-0       0.50       1.00       -             -           100.0 MiB     200.0 MiB     -                -              -
worker-0   1.00       2.00       -             -           1.0 GiB       2.0 GiB       -                -              35% (peak 80%) 3.0 GiB/16.0 GiB
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("tfk8s top with GPUs (-want +got):\n%s", diff)
	}
}

// Live figures get the GPU column from the run's records.
func TestAddGPUs(t *testing.T) {
	live := &topTable{Rows: []topRow{{Replica: "worker-0"}, {Replica: "worker-1"}}}
	addGPUs(live, &topTable{Rows: []topRow{{Replica: "worker-1", GPU: "35% (peak 80%) 3.0 GiB/16.0 GiB"}, {Replica: "ps-0"}}})
	want := &topTable{GPUs: true, Rows: []topRow{{Replica: "worker-0"}, {Replica: "worker-1", GPU: "35% (peak 80%) 3.0 GiB/16.0 GiB"}}}
	if diff := cmp.Diff(want, live); diff != "" {
		t.Errorf("addGPUs (-want +got):\n%s", diff)
	}
	none := &topTable{Rows: []topRow{{Replica: "worker-0"}}}
	addGPUs(none, &topTable{Rows: []topRow{{Replica: "worker-0"}}})
	if none.GPUs {
		t.Error("a run without GPU figures gave the table a GPU column")
	}
}
