package runs

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// onGPUs is a replica whose agent read GPUs of the mean utilisations given, each
// peaking 20 points above its mean.
func onGPUs(name string, means ...float64) Replica {
	r := used(name, 1, gib, 0)
	for i, m := range means {
		r.Usage.GPUs = append(r.Usage.GPUs, storage.GPUUsage{Index: i, Samples: 10, UtilizationMeanPercent: m,
			UtilizationPeakPercent: int(m) + 20, MemoryPeakBytes: gib, MemoryTotalBytes: 16 * gib})
	}
	return r
}

// gpuJob is adviceJob with each replica's container limited to gpus GPUs.
func gpuJob(types map[tfv1.ReplicaType]int32, gpus string) *tfv1.TFJob {
	job := adviceJob(types, "", "")
	for _, spec := range job.Spec.TFReplicaSpecs {
		spec.Template.Spec.Containers[0].Resources.Limits[tfjob.GPUResource] = resource.MustParse(gpus)
	}
	return job
}

// migJob is adviceJob with each replica's container limited to one MIG slice.
func migJob(types map[tfv1.ReplicaType]int32) *tfv1.TFJob {
	job := adviceJob(types, "", "")
	for _, spec := range job.Spec.TFReplicaSpecs {
		spec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/mig-1g.10gb"] = resource.MustParse("1")
	}
	return job
}

// claimJob is adviceJob with each replica claiming n GPUs.
func claimJob(types map[tfv1.ReplicaType]int32, n int64) *tfv1.TFJob {
	job := adviceJob(types, "", "")
	for _, spec := range job.Spec.TFReplicaSpecs {
		spec.DeviceClaim = &tfv1.DeviceClaim{DeviceClassName: "gpu.nvidia.com", Count: &n}
	}
	return job
}

func TestAdviseGPU(t *testing.T) {
	worker := map[tfv1.ReplicaType]int32{tfv1.ReplicaTypeWorker: 2}
	tests := []struct {
		name     string
		job      *tfv1.TFJob
		replicas []Replica
		want     []string
		why      []string
	}{{
		name:     "the issue's rule: a type whose GPUs are busy under 30% of the time on average",
		job:      gpuJob(worker, "2"),
		replicas: []Replica{onGPUs("worker-0", 10, 20), onGPUs("worker-1", 30, 40)},
		want: []string{"worker: GPU mean utilisation 25% (peak 60%) of 2 GPU(s) per replica, under 30%: the GPUs wait on their input; " +
			"prefetch and parallelise the input pipeline, raise the batch size, or ask for fewer"},
	}, {
		name:     "busy enough",
		job:      gpuJob(worker, "1"),
		replicas: []Replica{onGPUs("worker-0", 20), onGPUs("worker-1", 45)},
	}, {
		name:     "GPUs asked for and none read: the figures are missing, not the use",
		job:      gpuJob(worker, "1"),
		replicas: []Replica{onGPUs("worker-0", 5), onGPUs("worker-1")},
		why:      []string{"no GPU advice for worker: worker-1's agent read no GPU through NVML"},
	}, {
		name:     "no GPUs asked for, none read: nothing to say",
		job:      adviceJob(worker, "", ""),
		replicas: []Replica{onGPUs("worker-0"), onGPUs("worker-1")},
	}, {
		name:     "GPUs read without a device-plugin request (a claim): counted as seen",
		job:      adviceJob(map[tfv1.ReplicaType]int32{tfv1.ReplicaTypeWorker: 1}, "", ""),
		replicas: []Replica{onGPUs("worker-0", 3)},
		want: []string{"worker: GPU mean utilisation 3% (peak 23%) of 1 GPU(s) per replica, under 30%: the GPUs wait on their input; " +
			"prefetch and parallelise the input pipeline, raise the batch size, or ask for fewer"},
	}, {
		name: "a GPU NVML never read (MIG-enabled) is no idle GPU",
		job:  gpuJob(worker, "2"),
		replicas: func() []Replica {
			rs := []Replica{onGPUs("worker-0", 0, 50), onGPUs("worker-1", 0, 60)}
			for _, r := range rs {
				r.Usage.GPUs[0] = storage.GPUUsage{Index: 0}
			}
			return rs
		}(),
	}, {
		name:     "MIG slices: counted per replica, not across the type",
		job:      migJob(worker),
		replicas: []Replica{onGPUs("worker-0", 10), onGPUs("worker-1", 20)},
		want: []string{"worker: GPU mean utilisation 15% (peak 40%) of 1 GPU(s) per replica, under 30%: the GPUs wait on their input; " +
			"prefetch and parallelise the input pipeline, raise the batch size, or ask for fewer"},
	}, {
		name:     "a claim: its count per replica",
		job:      claimJob(worker, 2),
		replicas: []Replica{onGPUs("worker-0", 10, 10), onGPUs("worker-1", 20, 20)},
		want: []string{"worker: GPU mean utilisation 15% (peak 40%) of 2 GPU(s) per replica, under 30%: the GPUs wait on their input; " +
			"prefetch and parallelise the input pipeline, raise the batch size, or ask for fewer"},
	}, {
		name:     "a claim, no GPU read: the figures are missing",
		job:      claimJob(worker, 1),
		replicas: []Replica{onGPUs("worker-0", 10), onGPUs("worker-1")},
		why:      []string{"no GPU advice for worker: worker-1's agent read no GPU through NVML"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			advice, why := Advise(Run{State: string(tfv1.JobSucceeded), Job: tt.job}, tt.replicas)
			var got []string
			for _, a := range advice {
				got = append(got, a.String())
				if a.Applies() {
					t.Errorf("GPU advice %q applies: submit --right-size would change a request it does not know", a)
				}
			}
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Advise() (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tt.why, why); diff != "" {
				t.Errorf("Advise() why (-want +got):\n%s", diff)
			}
		})
	}
}

// submit --right-size leaves the GPUs as they were.
func TestApplyAdviceSkipsGPUs(t *testing.T) {
	job := gpuJob(map[tfv1.ReplicaType]int32{tfv1.ReplicaTypeWorker: 1}, "1")
	advice, _ := Advise(Run{State: string(tfv1.JobSucceeded), Job: job}, []Replica{onGPUs("worker-0", 5)})
	if len(advice) != 1 {
		t.Fatalf("advice = %v, want the GPU's", advice)
	}
	if changed := ApplyAdvice(job, advice); len(changed) != 0 {
		t.Errorf("ApplyAdvice changed %v, want nothing", changed)
	}
}
