package runs

import (
	"cmp"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
)

const gib = 1 << 30

// adviceJob is a job of the replica types given, each with requests (and equal
// limits) of cpu and memory, as submit --cpu --memory makes them.
func adviceJob(types map[tfv1.ReplicaType]int32, cpu, memory string) *tfv1.TFJob {
	job := &tfv1.TFJob{Spec: tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{}}}
	for rt, n := range types {
		res := corev1.ResourceList{}
		if cpu != "" {
			res[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if memory != "" {
			res[corev1.ResourceMemory] = resource.MustParse(memory)
		}
		job.Spec.TFReplicaSpecs[rt] = &tfv1.ReplicaSpec{Replicas: ptr.To(n), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "tensorflow", Resources: corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()}}},
		}}}
	}
	return job
}

func used(name string, cores float64, memory int64, oom int) Replica {
	return Replica{Name: name, Usage: &storage.Usage{Samples: 10, CPUCoresPeak: cores, MemoryPeakBytes: memory, OOMKills: oom}}
}

// restartedIn is a replica's record of its attempt n, its manifest listing the
// attempts before it.
func restartedIn(r Replica, n int) Replica {
	r.Usage.Attempt = n
	r.Manifest = &storage.Manifest{}
	for i := 1; i <= n; i++ {
		r.Manifest.Attempts = append(r.Manifest.Attempts, storage.Attempt{Number: i})
	}
	return r
}

func TestAdvise(t *testing.T) {
	worker := map[tfv1.ReplicaType]int32{tfv1.ReplicaTypeWorker: 2}
	one := map[tfv1.ReplicaType]int32{tfv1.ReplicaTypeWorker: 1}
	few := used("worker-0", 0.1, gib/4, 0)
	few.Usage.Samples = minUsageSamples - 1
	manifestOnly := used("worker-0", 0.1, gib/4, 0)
	manifestOnly.Manifest = &storage.Manifest{Attempts: []storage.Attempt{{Number: 1}, {Number: 2}}}
	tests := []struct {
		name     string
		state    tfv1.JobState
		live     bool
		job      *tfv1.TFJob
		replicas []Replica
		want     []string
		why      []string
	}{{
		name:     "the issue's example: 1.1 GiB of 8 GiB, the higher worker's peak counts",
		job:      adviceJob(worker, "", "8Gi"),
		replicas: []Replica{used("worker-0", 0, gib/2, 0), used("worker-1", 0, 11*gib/10, 0)},
		want:     []string{"worker: memory peak 1.1 GiB of 8.0 GiB requested; memory request 1536Mi would fit"},
	}, {
		name:     "memory within twice the suggestion is not advised",
		job:      adviceJob(one, "", "3Gi"),
		replicas: []Replica{used("worker-0", 0, 11*gib/10, 0)},
	}, {
		name:     "large peaks round to whole GiB",
		job:      adviceJob(one, "", "64Gi"),
		replicas: []Replica{used("worker-0", 0, 10*gib, 0)},
		want:     []string{"worker: memory peak 10.0 GiB of 64.0 GiB requested; memory request 13Gi would fit"},
	}, {
		name: "memory from the kernel's high-water mark where it is above the working set's peak",
		job:  adviceJob(one, "", "8Gi"),
		replicas: []Replica{{Name: "worker-0", Usage: &storage.Usage{Samples: 10, MemoryPeakBytes: gib / 2,
			MemoryHighWaterBytes: 2 * gib}}},
		want: []string{"worker: memory peak 2.0 GiB of 8.0 GiB requested; memory request 2816Mi would fit"},
	}, {
		name:     "CPU from the peak of cores, rounded up to 100m",
		job:      adviceJob(one, "4", ""),
		replicas: []Replica{used("worker-0", 0.42, gib, 0)},
		want:     []string{"worker: CPU peak 0.42 cores of 4 requested; CPU request 600m would fit"},
	}, {
		name:     "an OOM-killed type is not advised, whatever its other replicas used",
		job:      adviceJob(worker, "8", "8Gi"),
		replicas: []Replica{used("worker-0", 0.1, gib/4, 0), used("worker-1", 0.1, 8*gib, 1)},
		why:      []string{"no advice for worker: worker-1 was OOM-killed: its peak is the limit's, not its need"},
	}, {
		name:     "no usage recorded, no advice",
		job:      adviceJob(one, "8", "8Gi"),
		replicas: []Replica{{Name: "worker-0"}},
		why:      []string{"no advice for worker: worker-0 stored no usage record"},
	}, {
		name:     "a type is not advised from some of its replicas",
		job:      adviceJob(worker, "8", "8Gi"),
		replicas: []Replica{used("worker-0", 0.1, gib/4, 0), {Name: "worker-1"}},
		why:      []string{"no advice for worker: worker-1 stored no usage record"},
	}, {
		name:     "a replica that restarted: its record misses the earlier attempts",
		job:      adviceJob(worker, "8", "8Gi"),
		replicas: []Replica{used("worker-0", 0.1, gib/4, 0), restartedIn(used("worker-1", 0.1, gib/4, 0), 2)},
		why:      []string{"no advice for worker: worker-1 restarted, and its record covers only its latest attempt"},
	}, {
		name:     "a restart its manifest shows, its record predating attempts",
		job:      adviceJob(one, "8", "8Gi"),
		replicas: []Replica{manifestOnly},
		why:      []string{"no advice for worker: worker-0 restarted, and its record covers only its latest attempt"},
	}, {
		name:     "the first attempt's record is enough",
		job:      adviceJob(one, "", "8Gi"),
		replicas: []Replica{restartedIn(used("worker-0", 0, gib, 0), 1)},
		want:     []string{"worker: memory peak 1.0 GiB of 8.0 GiB requested; memory request 1536Mi would fit"},
	}, {
		name:     "too few samples",
		job:      adviceJob(one, "8", "8Gi"),
		replicas: []Replica{few},
		why:      []string{"no advice for worker: worker-0 has 4 usage samples, fewer than 5"},
	}, {
		name:     "a job still running is not advised",
		state:    tfv1.JobRunning,
		live:     true,
		job:      adviceJob(one, "8", "8Gi"),
		replicas: []Replica{used("worker-0", 0.1, gib/4, 0)},
		why:      []string{"no advice while the run runs: its peaks may still rise"},
	}, {
		name:     "a job that succeeded is advised before it is deleted",
		live:     true,
		job:      adviceJob(one, "", "8Gi"),
		replicas: []Replica{used("worker-0", 0.1, gib, 0)},
		want:     []string{"worker: memory peak 1.0 GiB of 8.0 GiB requested; memory request 1536Mi would fit"},
	}, {
		name:     "a failed run is not advised",
		state:    tfv1.JobFailed,
		job:      adviceJob(one, "8", "8Gi"),
		replicas: []Replica{used("worker-0", 0.1, gib/4, 0)},
		why:      []string{"no advice: the run is Failed, not Succeeded: only a whole, successful run shows what the job needs"},
	}, {
		name:     "nor one deleted before it finished",
		state:    "Deleted",
		job:      adviceJob(one, "8", "8Gi"),
		replicas: []Replica{used("worker-0", 0.1, gib/4, 0)},
		why:      []string{"no advice: the run is Deleted, not Succeeded: only a whole, successful run shows what the job needs"},
	}, {
		name:     "no request, nothing to compare with",
		job:      adviceJob(one, "", ""),
		replicas: []Replica{used("worker-0", 0.1, gib/4, 0)},
	}, {
		name:     "each type on its own, in order",
		job:      adviceJob(map[tfv1.ReplicaType]int32{tfv1.ReplicaTypeWorker: 1, tfv1.ReplicaTypePS: 1}, "2", "2Gi"),
		replicas: []Replica{used("ps-0", 0.1, 100<<20, 0), used("worker-0", 1.9, 2*gib, 0)},
		want: []string{
			"ps: memory peak 100.0 MiB of 2.0 GiB requested; memory request 256Mi would fit",
			"ps: CPU peak 0.10 cores of 2 requested; CPU request 200m would fit",
		},
	}, {
		name: "no job recorded",
		why:  []string{"no advice: no record of the job (run.json)"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Run{State: string(cmp.Or(tt.state, tfv1.JobSucceeded)), Live: tt.live, Job: tt.job}
			advice, why := Advise(r, tt.replicas)
			var got []string
			for _, a := range advice {
				got = append(got, a.String())
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

func TestApplyAdvice(t *testing.T) {
	job := adviceJob(map[tfv1.ReplicaType]int32{tfv1.ReplicaTypeWorker: 2}, "4", "8Gi")
	advice, _ := Advise(Run{State: string(tfv1.JobSucceeded), Job: job}, []Replica{used("worker-0", 0.42, 11*gib/10, 0), used("worker-1", 0.1, gib, 0)})
	changed := ApplyAdvice(job, advice)
	if diff := gocmp.Diff([]string{"worker memory 8Gi -> 1536Mi", "worker cpu 4 -> 600m"}, changed); diff != "" {
		t.Errorf("ApplyAdvice() changes (-want +got):\n%s", diff)
	}
	c := job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0]
	got := resources(c)
	want := map[string]string{"requests.cpu": "600m", "requests.memory": "1536Mi", "limits.cpu": "600m", "limits.memory": "1536Mi"}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("resources after ApplyAdvice (-want +got):\n%s", diff)
	}
}

// TestApplyAdviceKeepsLimit: a limit the user set above the request stays; only one
// that equalled the request follows it down.
func TestApplyAdviceKeepsLimit(t *testing.T) {
	job := adviceJob(map[tfv1.ReplicaType]int32{tfv1.ReplicaTypeWorker: 1}, "4", "8Gi")
	c := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0]
	c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("16Gi")
	advice, _ := Advise(Run{State: string(tfv1.JobSucceeded), Job: job}, []Replica{used("worker-0", 0.42, 11*gib/10, 0)})
	ApplyAdvice(job, advice)
	got := resources(*c)
	want := map[string]string{"requests.cpu": "600m", "requests.memory": "1536Mi", "limits.cpu": "600m", "limits.memory": "16Gi"}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("resources after ApplyAdvice (-want +got):\n%s", diff)
	}
}

// resources is a container's requests and limits as "requests.cpu": "600m".
func resources(c corev1.Container) map[string]string {
	got := map[string]string{}
	for name, list := range map[string]corev1.ResourceList{"requests": c.Resources.Requests, "limits": c.Resources.Limits} {
		for r, q := range list {
			got[name+"."+string(r)] = q.String()
		}
	}
	return got
}

// TestAdviceFlags: submit's --memory and --cpu set every replica type, so they are
// named only where every type has the same advice.
func TestAdviceFlags(t *testing.T) {
	both := map[tfv1.ReplicaType]int32{tfv1.ReplicaTypeWorker: 1, tfv1.ReplicaTypePS: 1}
	tests := []struct {
		name     string
		job      *tfv1.TFJob
		replicas []Replica
		want     []string
	}{{
		name:     "every type alike",
		job:      adviceJob(both, "4", "8Gi"),
		replicas: []Replica{used("ps-0", 0.42, gib, 0), used("worker-0", 0.4, gib, 0)},
		want:     []string{"--memory 1536Mi", "--cpu 600m"},
	}, {
		name:     "types that differ",
		job:      adviceJob(both, "4", "8Gi"),
		replicas: []Replica{used("ps-0", 0.42, gib, 0), used("worker-0", 1.2, 2*gib, 0)},
	}, {
		name:     "one type advised of two",
		job:      adviceJob(both, "4", "8Gi"),
		replicas: []Replica{used("ps-0", 0.42, gib, 0), {Name: "worker-0"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			advice, _ := Advise(Run{State: string(tfv1.JobSucceeded), Job: tt.job}, tt.replicas)
			if diff := gocmp.Diff(tt.want, AdviceFlags(tt.job, advice)); diff != "" {
				t.Errorf("AdviceFlags() (-want +got):\n%s", diff)
			}
		})
	}
}
