package runs

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// gpuIdlePercent is the mean GPU utilisation below which a replica type is advised:
// under it the GPUs wait on their input more than they compute, which a smaller
// request or a faster input pipeline mends, and a bigger one never does.
const gpuIdlePercent = 30

// gpuTally gathers the GPU figures of a replica type's replicas.
type gpuTally struct {
	means []float64 // each GPU's mean utilisation
	peak  int
	// missing is a replica of the type whose agent read no GPU; "" if none.
	missing string
	// perReplica is the most GPUs one replica read.
	perReplica int
}

// add adds one replica's usage record.
func (g *gpuTally) add(name string, u *storage.Usage) {
	gpus := u.ReadGPUs()
	if len(gpus) == 0 && g.missing == "" {
		g.missing = name
	}
	g.perReplica = max(g.perReplica, len(gpus))
	for _, gu := range gpus {
		g.means = append(g.means, gu.UtilizationMeanPercent)
		g.peak = max(g.peak, gu.UtilizationPeakPercent)
	}
}

// adviseGPU advises a type whose GPUs were idle more than gpuIdlePercent of the time
// on average. Its why says where a type that asked for GPUs has none recorded.
func adviseGPU(rt tfv1.ReplicaType, spec *tfv1.ReplicaSpec, g gpuTally) (a Advice, why string, ok bool) {
	asked := gpusAsked(spec)
	if g.missing != "" {
		if asked > 0 {
			why = fmt.Sprintf("no GPU advice for %s: %s's agent read no GPU through NVML", tfjob.TaskType(rt), g.missing)
		}
		return Advice{}, why, false
	}
	if len(g.means) == 0 {
		return Advice{}, "", false
	}
	var mean float64
	for _, m := range g.means {
		mean += m / float64(len(g.means))
	}
	if asked == 0 {
		asked = int64(g.perReplica) // read without being asked for: counted as seen
	}
	a = Advice{ReplicaType: rt, Resource: tfjob.GPUResource, Peak: float64(g.peak), MeanUtilizationPercent: mean,
		Requested: *resource.NewQuantity(asked, resource.DecimalSI)}
	return a, "", mean < gpuIdlePercent
}

// gpusAsked is how many GPUs each replica of spec asks for: of the device plugin's
// resources (nvidia.com/gpu, a MIG profile, a shared GPU) or by a claim; 0 if none.
func gpusAsked(spec *tfv1.ReplicaSpec) int64 {
	if n := tfjob.PodGPUs(&spec.Template.Spec); n > 0 {
		return n
	}
	if spec.DeviceClaim != nil {
		return ptr.Deref(spec.DeviceClaim.Count, 1)
	}
	return 0
}

// gpuString says a GPU advice as one line.
func (a Advice) gpuString() string {
	return fmt.Sprintf("%s: GPU mean utilisation %.0f%% (peak %.0f%%) of %s GPU(s) per replica, under %d%%: the GPUs wait on their input; "+
		"prefetch and parallelise the input pipeline, raise the batch size, or ask for fewer",
		tfjob.TaskType(a.ReplicaType), a.MeanUtilizationPercent, a.Peak, a.Requested.String(), gpuIdlePercent)
}
