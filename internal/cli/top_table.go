package cli

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// tfjobContainer is the container of a replica that runs under the agent.
const tfjobContainer = tfjob.ContainerName

// topTable is what tfk8s top prints: the source, then a row per replica.
type topTable struct {
	// Source says where the figures come from.
	Source string
	// Note says why the metrics API was not the source; "" when it was.
	Note string
	// Peaks is true when the rows have peaks (a usage record's).
	Peaks bool
	// GPUs is true when some row has GPU figures (a usage record's, read through
	// NVML): the table then has a GPU column.
	GPUs bool
	Rows []topRow
}

// topRow is one replica's figures. Used and peak CPU are in cores, memory in bytes;
// requests and limits are the container's, nil where it sets none.
type topRow struct {
	Replica              string
	CPU, CPUPeak         float64
	Memory, MemoryPeak   int64
	CPURequest, CPULimit *resource.Quantity
	MemRequest, MemLimit *resource.Quantity
	// GPU is the replica's GPUs in a few words (storage.Usage.GPUSummary); "" for none.
	GPU string
	// Missing says why the replica has no figures; "" when it has.
	Missing string
}

// metricsTable makes the rows of a job's pods from the metrics API's figures of
// their replica container; a pod the API has no figures of yet says so.
func metricsTable(job string, pods []corev1.Pod, items []metricsv1beta1.PodMetrics) *topTable {
	byPod := podMetrics(items)
	t := &topTable{Source: fmt.Sprintf("metrics API (metrics.k8s.io): the latest figures of tfjob %s's pods", job)}
	var newest time.Time
	for i := range pods {
		p := &pods[i]
		row := topRow{Replica: jobs.ReplicaName(p)}
		c := replicaContainer(&p.Spec)
		if c != nil {
			setResources(&row, c.Resources)
		}
		m := byPod[p.Name]
		switch {
		case c == nil:
			row.Missing = "pod has no container"
		case m == nil:
			row.Missing = "no figures yet"
		default:
			row.Missing = "no figures of container " + c.Name
			for _, cm := range m.Containers {
				if cm.Name == c.Name {
					row.CPU = float64(cm.Usage.Cpu().MilliValue()) / 1000
					row.Memory = cm.Usage.Memory().Value()
					row.Missing = ""
				}
			}
			if m.Timestamp.After(newest) {
				newest = m.Timestamp.Time
			}
		}
		t.Rows = append(t.Rows, row)
	}
	if !newest.IsZero() {
		t.Source += ", sampled at " + newest.UTC().Format(time.RFC3339)
	}
	return t
}

// usageTable makes the rows of a run from its replicas' usage records: means and
// peaks, against the requests and limits of the job as submitted.
func usageTable(d *runs.Details) *topTable {
	t := &topTable{Peaks: true,
		Source: fmt.Sprintf("the agents' usage records (usage.json) of run %s/%s: means and peaks of each replica's latest attempt", d.Name, d.Run.Run)}
	containers := replicaContainers(d.Job)
	for _, r := range d.Manifests {
		row := topRow{Replica: r.Name}
		if c := containers[r.Name]; c != nil {
			setResources(&row, c.Resources)
		}
		switch u := r.Usage; {
		case r.UsageErr != nil:
			row.Missing = r.UsageErr.Error()
		case u == nil:
			row.Missing = "no usage record"
		default:
			row.CPU, row.CPUPeak = u.CPUCoresMean, u.CPUCoresPeak
			row.Memory, row.MemoryPeak = u.MemoryMeanBytes, u.MemoryPeakBytes
			row.GPU = u.GPUSummary()
			t.GPUs = t.GPUs || row.GPU != ""
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// addGPUs copies the GPU figures of recorded's rows into t's rows of the same
// replicas.
func addGPUs(t, recorded *topTable) {
	gpu := map[string]string{}
	for _, r := range recorded.Rows {
		if r.GPU != "" {
			gpu[r.Replica] = r.GPU
		}
	}
	for i := range t.Rows {
		if g := gpu[t.Rows[i].Replica]; g != "" {
			t.Rows[i].GPU, t.GPUs = g, true
		}
	}
}

// replicaContainers maps each replica of job to its container spec; empty when job
// is nil (a run that kept no record of it).
func replicaContainers(job *tfv1.TFJob) map[string]*corev1.Container {
	m := map[string]*corev1.Container{}
	if job == nil {
		return m
	}
	for _, rt := range tfv1.ReplicaTypes {
		spec := job.Spec.TFReplicaSpecs[rt]
		if spec == nil {
			continue
		}
		c := replicaContainer(&spec.Template.Spec)
		for i := range tfjob.Replicas(spec) {
			m[tfjob.ReplicaName(rt, i)] = c
		}
	}
	return m
}

// setResources copies a container's CPU and memory requests and limits into row.
func setResources(row *topRow, r corev1.ResourceRequirements) {
	get := func(l corev1.ResourceList, name corev1.ResourceName) *resource.Quantity {
		if q, ok := l[name]; ok {
			return &q
		}
		return nil
	}
	row.CPURequest, row.CPULimit = get(r.Requests, corev1.ResourceCPU), get(r.Limits, corev1.ResourceCPU)
	row.MemRequest, row.MemLimit = get(r.Requests, corev1.ResourceMemory), get(r.Limits, corev1.ResourceMemory)
}

// printTop writes the source line, the note if any, and the table.
func printTop(w io.Writer, t *topTable) error {
	fmt.Fprintf(w, "Source: %s\n", t.Source)
	if t.Note != "" {
		fmt.Fprintf(w, "(not the metrics API: %s)\n", t.Note)
	}
	tw := newTabWriter(w)
	cols := []string{"REPLICA", "CPU", "CPU REQUEST", "CPU LIMIT", "MEMORY", "MEMORY REQUEST", "MEMORY LIMIT"}
	if t.Peaks {
		cols = []string{"REPLICA", "CPU MEAN", "CPU PEAK", "CPU REQUEST", "CPU LIMIT", "MEMORY MEAN", "MEMORY PEAK", "MEMORY REQUEST", "MEMORY LIMIT"}
	}
	if t.GPUs {
		cols = append(cols, "GPU")
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range t.Rows {
		cells := topCells(r, t.Peaks)
		if t.GPUs && r.Missing == "" {
			cells = append(cells, cmp.Or(r.GPU, "-"))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// topCells renders one row: cores with two decimals, bytes in binary units, "-"
// for a request or limit not set.
func topCells(r topRow, peaks bool) []string {
	if r.Missing != "" {
		return []string{r.Replica, "<" + r.Missing + ">"}
	}
	cores := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	cpu := []string{cores(r.CPU)}
	mem := []string{storage.FormatBytes(r.Memory)}
	if peaks {
		cpu = append(cpu, cores(r.CPUPeak))
		mem = append(mem, storage.FormatBytes(r.MemoryPeak))
	}
	cells := append([]string{r.Replica}, cpu...)
	cells = append(cells, quantity(r.CPURequest), quantity(r.CPULimit))
	cells = append(cells, mem...)
	return append(cells, quantity(r.MemRequest), quantity(r.MemLimit))
}

// quantity renders a request or limit as the spec has it.
func quantity(q *resource.Quantity) string {
	if q == nil {
		return "-"
	}
	return q.String()
}
