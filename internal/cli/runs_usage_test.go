package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"

	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func TestDescribeRunUsage(t *testing.T) {
	tests := []struct {
		name     string
		replicas []runs.Replica
		want     string
	}{{
		name:     "none stored",
		replicas: []runs.Replica{{Name: "worker-0"}},
		want:     "Usage:\n  <none>\n",
	}, {
		name: "peaks, means and the limit",
		replicas: []runs.Replica{
			{Name: "chief-0", Usage: &storage.Usage{Attempt: 1, CPUSeconds: 12.34, CPUCoresMean: 1.5, CPUCoresPeak: 1.98,
				MemoryMeanBytes: 200 << 20, MemoryPeakBytes: 300 << 20}},
			{Name: "worker-0", Usage: &storage.Usage{Attempt: 2, CPUSeconds: 3, CPUCoresMean: 0.25, CPUCoresPeak: 1,
				MemoryMeanBytes: 10 << 20, MemoryPeakBytes: 12 << 20, MemoryHighWaterBytes: 64 << 20, MemoryLimitBytes: 64 << 20, OOMKills: 1}},
			{Name: "worker-1", UsageErr: errors.New("reading the usage record: denied")},
		},
		want: "Usage:\n" +
			"  REPLICA    ATTEMPT   CPU MEAN   CPU PEAK   CPU TIME   MEMORY MEAN   MEMORY PEAK   LIMIT      OOM KILLS\n" +
			"  chief-0    1         1.50       1.98       12.3s      200.0 MiB     300.0 MiB     none       0\n" +
			"  worker-0   2         0.25       1.00       3.0s       10.0 MiB      12.0 MiB      64.0 MiB   1\n" +
			"  worker-1   <reading the usage record: denied>\n" +
			"  worker-0 OOMKilled: the kernel killed 1 process(es) at the memory limit 64.0 MiB; peak 64.0 MiB charged, working set peak 12.0 MiB\n",
	}, {
		name: "GPUs read through NVML",
		replicas: []runs.Replica{
			{Name: "worker-0", Usage: &storage.Usage{Attempt: 1, CPUSeconds: 10, CPUCoresMean: 1, CPUCoresPeak: 1, MemoryMeanBytes: 1 << 30, MemoryPeakBytes: 1 << 30,
				GPUs: []storage.GPUUsage{
					{Index: 0, Samples: 5, UtilizationMeanPercent: 12.4, UtilizationPeakPercent: 30, MemoryPeakBytes: 2 << 30, MemoryTotalBytes: 16 << 30},
					{Index: 1, Samples: 5, UtilizationMeanPercent: 90, UtilizationPeakPercent: 99, MemoryPeakBytes: 15 << 30, MemoryTotalBytes: 16 << 30},
				}}},
		},
		want: "Usage:\n" +
			"  REPLICA    ATTEMPT   CPU MEAN   CPU PEAK   CPU TIME   MEMORY MEAN   MEMORY PEAK   LIMIT   OOM KILLS\n" +
			"  worker-0   1         1.00       1.00       10.0s      1.0 GiB       1.0 GiB       none    0\n" +
			"GPUs:\n" +
			"  REPLICA    GPU   UTILISATION MEAN   UTILISATION PEAK   MEMORY PEAK   MEMORY TOTAL\n" +
			"  worker-0   0     12%                30%                2.0 GiB       16.0 GiB\n" +
			"  worker-0   1     90%                99%                15.0 GiB      16.0 GiB\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := describeRunUsage(&b, tt.replicas); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDescribeRunAdvice(t *testing.T) {
	advice := []runs.Advice{{ReplicaType: tfv1.ReplicaTypeWorker, Resource: corev1.ResourceMemory, Peak: 11 << 30 / 10,
		Requested: resource.MustParse("8Gi"), Suggested: resource.MustParse("1536Mi")}}
	job := func(types ...tfv1.ReplicaType) *tfv1.TFJob {
		j := &tfv1.TFJob{Spec: tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{}}}
		for _, rt := range types {
			j.Spec.TFReplicaSpecs[rt] = &tfv1.ReplicaSpec{}
		}
		return j
	}
	recorded := []runs.Replica{{Name: "worker-0", Usage: &storage.Usage{Samples: 10}}}
	tests := []struct {
		name     string
		job      *tfv1.TFJob
		advice   []runs.Advice
		noAdvice []string
		replicas []runs.Replica
		want     string
	}{{
		name: "none, nothing printed",
	}, {
		name:   "the advice and how to apply it; the flag too, as it is every type's",
		job:    job(tfv1.ReplicaTypeWorker),
		advice: advice,
		want: "Right-sizing:\n" +
			"  worker: memory peak 1.1 GiB of 8.0 GiB requested; memory request 1536Mi would fit\n" +
			"  tfk8s submit --from-run mnist/0f3a9c2e --right-size applies it, as would --memory 1536Mi\n",
	}, {
		name:     "no flag where a type's advice is not every type's: --memory sets them all",
		job:      job(tfv1.ReplicaTypeWorker, tfv1.ReplicaTypePS),
		advice:   advice,
		noAdvice: []string{"no advice for ps: ps-0 stored no usage record"},
		replicas: recorded,
		want: "Right-sizing:\n" +
			"  worker: memory peak 1.1 GiB of 8.0 GiB requested; memory request 1536Mi would fit\n" +
			"  no advice for ps: ps-0 stored no usage record\n" +
			"  tfk8s submit --from-run mnist/0f3a9c2e --right-size applies it\n",
	}, {
		name:     "why there is none, where a replica recorded its usage",
		job:      job(tfv1.ReplicaTypeWorker),
		noAdvice: []string{"no advice: the run is Failed, not Succeeded: only a whole, successful run shows what the job needs"},
		replicas: recorded,
		want: "Right-sizing:\n" +
			"  no advice: the run is Failed, not Succeeded: only a whole, successful run shows what the job needs\n",
	}, {
		name: "idle GPUs: advice that submit --right-size does not apply",
		job:  job(tfv1.ReplicaTypeWorker),
		advice: []runs.Advice{{ReplicaType: tfv1.ReplicaTypeWorker, Resource: tfjob.GPUResource, Peak: 40, MeanUtilizationPercent: 12,
			Requested: resource.MustParse("1")}},
		want: "Right-sizing:\n" +
			"  worker: GPU mean utilisation 12% (peak 40%) of 1 GPU(s) per replica, under 30%: the GPUs wait on their input; " +
			"prefetch and parallelise the input pipeline, raise the batch size, or ask for fewer\n",
	}, {
		name:     "nothing where none did",
		job:      job(tfv1.ReplicaTypeWorker),
		noAdvice: []string{"no advice for worker: worker-0 stored no usage record"},
		replicas: []runs.Replica{{Name: "worker-0"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			d := &runs.Details{Run: runs.Run{Name: "mnist", Run: "0f3a9c2e", Job: tt.job}, Advice: tt.advice, NoAdvice: tt.noAdvice,
				Manifests: tt.replicas}
			if err := describeRunAdvice(&b, d); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// runs show -o json says why a run has no advice, as a field a script can read.
func TestRunDocumentNoAdvice(t *testing.T) {
	job := &tfv1.TFJob{Spec: tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeWorker: {}}}}
	run := runs.Run{Name: "mnist", Run: "0f3a9c2e", State: string(tfv1.JobFailed), Job: job}
	d := &runs.Details{Run: run, Manifests: []runs.Replica{{Name: "worker-0", Usage: &storage.Usage{Samples: 10}}}}
	d.Advice, d.NoAdvice = runs.Advise(d.Run, d.Manifests)
	var b bytes.Buffer
	if err := printObject(&b, newRunDocument(d), "json"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Advice   []runs.Advice `json:"advice"`
		NoAdvice []string      `json:"noAdvice"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"no advice: the run is Failed, not Succeeded: only a whole, successful run shows what the job needs"}
	if diff := cmp.Diff(want, got.NoAdvice); diff != "" || got.Advice != nil {
		t.Errorf("noAdvice (-want +got):\n%s\nadvice: %v, want none", diff, got.Advice)
	}
	var text bytes.Buffer
	if err := describeRunAdvice(&text, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), want[0]) {
		t.Errorf("runs show prints %q; the JSON's reason %q is not in it", text.String(), want[0])
	}
}
