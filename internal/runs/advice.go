package runs

import (
	"fmt"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// The right-sizing rule. A suggestion is the peak of the type's replicas with
// headroom, rounded up to a unit a person would type; it is given only where the
// request is more than twice it, so that ordinary variation between runs and
// the rounding never turn into advice, and a run that shrank once is not told to
// shrink again.
const (
	// adviceHeadroom is the margin over the peak: a sampled peak misses what
	// happened between samples, and the next run's input may be larger.
	adviceHeadroom = 1.3
	// adviceFactor is how far above the suggestion a request must be to be advised.
	adviceFactor = 2
	// memoryUnit and largeMemoryUnit round memory suggestions: 256 MiB below
	// largeMemory, whole GiB above it.
	memoryUnit      = 256 << 20
	largeMemoryUnit = 1 << 30
	largeMemory     = 4 << 30
	// cpuUnitMilli rounds CPU suggestions, in millicores.
	cpuUnitMilli = 100
)

// Advice is one resource of one replica type whose peak use was far below its
// request, and the request that would have fitted it.
type Advice struct {
	// ReplicaType is the type advised, all of its replicas together.
	ReplicaType tfv1.ReplicaType `json:"replicaType"`
	// Resource is memory or cpu.
	Resource corev1.ResourceName `json:"resource"`
	// Peak is the highest use among the type's replicas: bytes of working set, or
	// cores.
	Peak float64 `json:"peak"`
	// Requested is what each replica of the type requested.
	Requested resource.Quantity `json:"requested"`
	// Suggested is the request that would fit the peak with headroom.
	Suggested resource.Quantity `json:"suggested"`
}

// Flag is the submit flag that sets the resource.
func (a Advice) Flag() string {
	if a.Resource == corev1.ResourceCPU {
		return "--cpu"
	}
	return "--memory"
}

// String says it as one line, as tfk8s runs show prints it.
func (a Advice) String() string {
	peak, requested := fmt.Sprintf("%.2f cores", a.Peak), a.Requested.String()
	name := "CPU"
	if a.Resource == corev1.ResourceMemory {
		peak, requested, name = storage.FormatBytes(int64(a.Peak)), storage.FormatBytes(a.Requested.Value()), "memory"
	}
	return fmt.Sprintf("%s: %s peak %s of %s requested; %s %s would fit",
		tfjob.TaskType(a.ReplicaType), name, peak, requested, a.Flag(), a.Suggested.String())
}

// Advise is the right-sizing advice of a run: per replica type of job, the memory
// and CPU whose request was more than twice the peak with headroom. A type is not
// advised when a replica of it was OOM-killed (its peak is the limit's, not its
// need) or when none of its replicas recorded its usage. Nil job, nil advice.
func Advise(job *tfv1.TFJob, replicas []Replica) []Advice {
	if job == nil {
		return nil
	}
	usage := make(map[string]*storage.Usage, len(replicas))
	for _, r := range replicas {
		if r.Usage != nil {
			usage[r.Name] = r.Usage
		}
	}
	var out []Advice
	for _, rt := range slices.Sorted(maps.Keys(job.Spec.TFReplicaSpecs)) {
		spec := job.Spec.TFReplicaSpecs[rt]
		if spec == nil {
			continue
		}
		c := tfjob.TensorFlowContainer(spec.Template.Spec.Containers)
		if c == nil {
			continue
		}
		peakMem, peakCPU, seen, oom := 0.0, 0.0, false, false
		for i := range tfjob.Replicas(spec) {
			u := usage[tfjob.ReplicaName(rt, i)]
			if u == nil || u.Samples == 0 {
				continue
			}
			seen, oom = true, oom || u.OOMKills > 0
			peakMem, peakCPU = max(peakMem, float64(u.MemoryPeakBytes)), max(peakCPU, u.CPUCoresPeak)
		}
		if !seen || oom {
			continue
		}
		if a, ok := adviseOne(rt, c, corev1.ResourceMemory, peakMem); ok {
			out = append(out, a)
		}
		if a, ok := adviseOne(rt, c, corev1.ResourceCPU, peakCPU); ok {
			out = append(out, a)
		}
	}
	return out
}

// adviseOne advises one resource of a container whose replicas peaked at peak.
func adviseOne(rt tfv1.ReplicaType, c *corev1.Container, name corev1.ResourceName, peak float64) (Advice, bool) {
	requested, ok := c.Resources.Requests[name]
	if !ok {
		requested, ok = c.Resources.Limits[name]
	}
	if !ok || peak <= 0 {
		return Advice{}, false
	}
	a := Advice{ReplicaType: rt, Resource: name, Peak: peak, Requested: requested}
	if name == corev1.ResourceMemory {
		a.Suggested = *resource.NewQuantity(suggestMemory(peak), resource.BinarySI)
		return a, requested.Value() > adviceFactor*a.Suggested.Value()
	}
	a.Suggested = *resource.NewMilliQuantity(suggestCPU(peak), resource.DecimalSI)
	return a, requested.MilliValue() > adviceFactor*a.Suggested.MilliValue()
}

// suggestMemory is the peak in bytes with headroom, rounded up to its unit.
func suggestMemory(peak float64) int64 {
	want := peak * adviceHeadroom
	unit := float64(memoryUnit)
	if want > largeMemory {
		unit = largeMemoryUnit
	}
	return int64(math.Ceil(want/unit) * unit)
}

// suggestCPU is the peak in cores with headroom, in millicores rounded up to their
// unit.
func suggestCPU(peak float64) int64 {
	return int64(math.Ceil(peak*adviceHeadroom*1000/cpuUnitMilli) * cpuUnitMilli)
}

// ApplyAdvice sets the requests of job's replica types as advised, and their
// limits where the container has one (a limit left above the new request would
// no longer be what the job asked for). It returns what it changed, one line each:
// "worker memory 8Gi -> 1536Mi".
func ApplyAdvice(job *tfv1.TFJob, advice []Advice) []string {
	var changed []string
	for _, a := range advice {
		spec := job.Spec.TFReplicaSpecs[a.ReplicaType]
		if spec == nil {
			continue
		}
		c := tfjob.TensorFlowContainer(spec.Template.Spec.Containers)
		if c == nil {
			continue
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		c.Resources.Requests[a.Resource] = a.Suggested
		if _, ok := c.Resources.Limits[a.Resource]; ok {
			c.Resources.Limits[a.Resource] = a.Suggested
		}
		changed = append(changed, fmt.Sprintf("%s %s %s -> %s", tfjob.TaskType(a.ReplicaType), a.Resource, a.Requested.String(), a.Suggested.String()))
	}
	return changed
}
