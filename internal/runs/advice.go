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
// request, and the request that would have fitted it; or, for GPUs, whose GPUs were
// mostly idle.
type Advice struct {
	// ReplicaType is the type advised, all of its replicas together.
	ReplicaType tfv1.ReplicaType `json:"replicaType"`
	// Resource is memory, cpu or nvidia.com/gpu.
	Resource corev1.ResourceName `json:"resource"`
	// Peak is the highest use among the type's replicas: bytes of memory, the
	// working set's peak or the kernel's high-water mark whichever is higher,
	// cores, or a GPU's utilisation in percent.
	Peak float64 `json:"peak"`
	// MeanUtilizationPercent is, for GPUs, the mean of the type's GPUs' utilisation.
	MeanUtilizationPercent float64 `json:"meanUtilizationPercent,omitempty"`
	// Requested is what each replica of the type requested.
	Requested resource.Quantity `json:"requested"`
	// Suggested is the request that would fit the peak with headroom; none for GPUs,
	// whose idleness a smaller request may not mend.
	Suggested resource.Quantity `json:"suggested,omitzero"`
}

// Applies is whether submit --right-size can apply the advice: memory and CPU, not
// idle GPUs.
func (a Advice) Applies() bool {
	return a.Resource == corev1.ResourceMemory || a.Resource == corev1.ResourceCPU
}

// Flag is the submit flag that sets the resource.
func (a Advice) Flag() string {
	if a.Resource == corev1.ResourceCPU {
		return "--cpu"
	}
	return "--memory"
}

// String says it as one line, as tfk8s runs show prints it. It names no flag:
// submit's --memory and --cpu set every replica type, and the advice is of one.
func (a Advice) String() string {
	if a.Resource == tfjob.GPUResource {
		return a.gpuString()
	}
	peak, requested := fmt.Sprintf("%.2f cores", a.Peak), a.Requested.String()
	name := "CPU"
	if a.Resource == corev1.ResourceMemory {
		peak, requested, name = storage.FormatBytes(int64(a.Peak)), storage.FormatBytes(a.Requested.Value()), "memory"
	}
	return fmt.Sprintf("%s: %s peak %s of %s requested; %s request %s would fit",
		tfjob.TaskType(a.ReplicaType), name, peak, requested, name, a.Suggested.String())
}

// AdviceFlags are the submit flags that say the same as advice of job, "--memory
// 1536Mi", for each resource whose advice every replica type of job has, all alike;
// none where the types differ, as each flag sets them all.
func AdviceFlags(job *tfv1.TFJob, advice []Advice) []string {
	if job == nil {
		return nil
	}
	var flags []string
	for _, res := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
		var same *Advice
		n := 0
		for _, a := range advice {
			if a.Resource != res {
				continue
			}
			if same != nil && same.Suggested.Cmp(a.Suggested) != 0 {
				n = -1
				break
			}
			same, n = &a, n+1
		}
		if same != nil && n == len(job.Spec.TFReplicaSpecs) {
			flags = append(flags, same.Flag()+" "+same.Suggested.String())
		}
	}
	return flags
}

// minUsageSamples is the fewest samples a replica's usage record must hold for its
// type to be advised: at the agent's 2 s interval, about 10 s of running. Fewer are a
// replica that ended while it was starting (loading data, building its graph), whose
// peak is not the one of a run that trained.
const minUsageSamples = 5

// Advise is the right-sizing advice of run r: per replica type of its job, the
// memory and CPU whose request was more than twice the peak with headroom, and the
// GPUs whose mean utilisation was under gpuIdlePercent (advice_gpu.go). Advice
// is given only from a run that ended Succeeded, for a type whose every replica
// recorded its usage over at least minUsageSamples samples, in its first attempt
// (a record covers only the latest attempt, so a restart hides what the earlier
// ones used, an OOM kill among them), and none was OOM-killed (its peak is the
// limit's, not its need). Where it gives none, why says so, one line each, for the
// run or per type.
func Advise(r Run, replicas []Replica) (advice []Advice, why []string) {
	job := r.Job
	switch {
	case r.Running():
		return nil, []string{"no advice while the run runs: its peaks may still rise"}
	case job == nil:
		return nil, []string{"no advice: no record of the job (run.json)"}
	case r.State != string(tfv1.JobSucceeded):
		return nil, []string{fmt.Sprintf("no advice: the run is %s, not Succeeded: only a whole, successful run shows what the job needs", r.State)}
	}
	byName := make(map[string]Replica, len(replicas))
	for _, rep := range replicas {
		byName[rep.Name] = rep
	}
	for _, rt := range slices.Sorted(maps.Keys(job.Spec.TFReplicaSpecs)) {
		spec := job.Spec.TFReplicaSpecs[rt]
		if spec == nil {
			continue
		}
		c := tfjob.TensorFlowContainer(spec.Template.Spec.Containers)
		if c == nil {
			continue
		}
		peakMem, peakCPU, reason := 0.0, 0.0, ""
		var gpus gpuTally
		for i := range tfjob.Replicas(spec) {
			name := tfjob.ReplicaName(rt, i)
			rep := byName[name]
			u := rep.Usage
			switch {
			case u == nil:
				reason = name + " stored no usage record"
			case u.OOMKills > 0:
				reason = name + " was OOM-killed: its peak is the limit's, not its need"
			case restarted(rep):
				reason = name + " restarted, and its record covers only its latest attempt"
			case u.Samples < minUsageSamples:
				reason = fmt.Sprintf("%s has %d usage samples, fewer than %d", name, u.Samples, minUsageSamples)
			}
			if reason != "" {
				break
			}
			// The kernel's high-water mark sees between samples too: it is the figure
			// to set a limit by (storage.Usage).
			peakMem = max(peakMem, float64(u.MemoryPeakBytes), float64(u.MemoryHighWaterBytes))
			peakCPU = max(peakCPU, u.CPUCoresPeak)
			gpus.add(name, u)
		}
		if reason != "" {
			why = append(why, fmt.Sprintf("no advice for %s: %s", tfjob.TaskType(rt), reason))
			continue
		}
		if a, ok := adviseOne(rt, c, corev1.ResourceMemory, peakMem); ok {
			advice = append(advice, a)
		}
		if a, ok := adviseOne(rt, c, corev1.ResourceCPU, peakCPU); ok {
			advice = append(advice, a)
		}
		a, whyNot, ok := adviseGPU(rt, spec, gpus)
		if ok {
			advice = append(advice, a)
		} else if whyNot != "" {
			why = append(why, whyNot)
		}
	}
	return advice, why
}

// restarted is whether the replica ran more than one attempt, as its usage record
// or its manifest says.
func restarted(rep Replica) bool {
	if rep.Usage != nil && rep.Usage.Attempt > 1 {
		return true
	}
	if rep.Manifest == nil {
		return false
	}
	return len(rep.Manifest.Attempts) > 1 || slices.ContainsFunc(rep.Manifest.Attempts, func(a storage.Attempt) bool { return a.Number > 1 })
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

// ApplyAdvice sets the requests of job's replica types as advised, where the advice
// Applies, and their limits where the limit equalled the old request (as submit
// --memory makes it); a limit the user set above the request is theirs to keep. It
// returns what it changed, one line each: "worker memory 8Gi -> 1536Mi".
func ApplyAdvice(job *tfv1.TFJob, advice []Advice) []string {
	var changed []string
	for _, a := range advice {
		spec := job.Spec.TFReplicaSpecs[a.ReplicaType]
		if spec == nil || !a.Applies() {
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
		if l, ok := c.Resources.Limits[a.Resource]; ok && l.Cmp(a.Requested) == 0 {
			c.Resources.Limits[a.Resource] = a.Suggested
		}
		changed = append(changed, fmt.Sprintf("%s %s %s -> %s", tfjob.TaskType(a.ReplicaType), a.Resource, a.Requested.String(), a.Suggested.String()))
	}
	return changed
}
