package runs

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
}

// add adds one replica's usage record.
func (g *gpuTally) add(name string, u *storage.Usage) {
	if len(u.GPUs) == 0 && g.missing == "" {
		g.missing = name
	}
	for _, gu := range u.GPUs {
		g.means = append(g.means, gu.UtilizationMeanPercent)
		g.peak = max(g.peak, gu.UtilizationPeakPercent)
	}
}

// adviseGPU advises a type whose GPUs were idle more than gpuIdlePercent of the time
// on average. Its why says where a type that asked for GPUs has none recorded.
func adviseGPU(rt tfv1.ReplicaType, c *corev1.Container, g gpuTally) (a Advice, why string, ok bool) {
	requested, asked := c.Resources.Limits[tfjob.GPUResource]
	if !asked {
		requested, asked = c.Resources.Requests[tfjob.GPUResource]
	}
	if g.missing != "" {
		if asked {
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
	a = Advice{ReplicaType: rt, Resource: tfjob.GPUResource, Peak: float64(g.peak), MeanUtilizationPercent: mean, Requested: requested}
	if !asked {
		a.Requested = *resource.NewQuantity(int64(len(g.means)), resource.DecimalSI)
	}
	return a, "", mean < gpuIdlePercent
}

// gpuString says a GPU advice as one line.
func (a Advice) gpuString() string {
	return fmt.Sprintf("%s: GPU mean utilisation %.0f%% (peak %.0f%%) of %s GPU(s) per replica, under %d%%: the GPUs wait on their input; "+
		"prefetch and parallelise the input pipeline, raise the batch size, or ask for fewer",
		tfjob.TaskType(a.ReplicaType), a.MeanUtilizationPercent, a.Peak, a.Requested.String(), gpuIdlePercent)
}
