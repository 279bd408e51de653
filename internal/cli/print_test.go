package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func TestPrintJobs(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tf := corev1.Container{Name: "tensorflow", Image: "tf:2.16"}
	withGPUs := *tf.DeepCopy()
	withGPUs.Resources.Limits = corev1.ResourceList{tfjob.GPUResource: resource.MustParse("2")}
	running := tfJob("mnist", "team", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
		tfv1.ReplicaTypeChief:  replica(1, withGPUs),
		tfv1.ReplicaTypePS:     replica(2, tf),
		tfv1.ReplicaTypeWorker: replica(4, withGPUs),
	})
	// 6 of the 10 GPUs held: the chief's and two workers' pods are bound.
	allocated := map[string]int64{"team/mnist": 6}
	// Its chief's agent recorded step 240 (list reads progress only for -o wide).
	progress := map[string]progressFigures{"team/mnist": {"240", "0.123457"}}
	running.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Minute))
	running.Status.State = tfv1.JobRunning
	running.Status.ReplicaStatuses = map[tfv1.ReplicaType]*tfv1.ReplicaStatus{
		tfv1.ReplicaTypePS:     {Active: 2},
		tfv1.ReplicaTypeWorker: {Active: 3, Succeeded: 1, Restarts: 2},
	}
	fresh := tfJob("a-much-longer-name", "default", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeWorker: {}})
	fresh.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Second))
	jobs := []tfv1.TFJob{*running, *fresh}

	cases := []struct {
		name          string
		format        string
		withNamespace bool
		want          string
	}{{
		name: "table",
		want: "" +
			"NAME                 STATE     WORKERS   PS    GPUS   AGE\n" +
			"mnist                Running   4         2     6/10   90m\n" +
			"a-much-longer-name   <none>    1         0     -      5s\n",
	}, {
		name:          "all namespaces",
		withNamespace: true,
		want: "" +
			"NAMESPACE   NAME                 STATE     WORKERS   PS    GPUS   AGE\n" +
			"team        mnist                Running   4         2     6/10   90m\n" +
			"default     a-much-longer-name   <none>    1         0     -      5s\n",
	}, {
		name:   "wide",
		format: outputWide,
		want: "" +
			"NAME                 STATE     WORKERS   PS    GPUS   AGE   CHIEF   EVALUATOR   ACTIVE   SUCCEEDED   FAILED   RESTARTS   STEP   LOSS       IMAGE\n" +
			"mnist                Running   4         2     6/10   90m   1       0           5        1           0        2          240    0.123457   tf:2.16\n" +
			"a-much-longer-name   <none>    1         0     -      5s    0       0           0        0           0        0          -      -          <none>\n",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := printJobs(&buf, jobs, allocated, progress, tc.format, tc.withNamespace, now); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, buf.String()); diff != "" {
				t.Errorf("printJobs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrintObject(t *testing.T) {
	job := tfJob("mnist", "team", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeWorker: replica(1, corev1.Container{Name: "tensorflow", Image: "tf"})})
	job.TypeMeta = metav1.TypeMeta{}
	job.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	var buf bytes.Buffer
	if err := printObject(&buf, jobspec.ForPrinting(job), outputYAML); err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: tfk8s.io/v1alpha1
kind: TFJob
metadata:
  name: mnist
  namespace: team
spec:
  networking: {}
  runPolicy: {}
  tfReplicaSpecs:
    Worker:
      replicas: 1
      template:
        metadata: {}
        spec:
          containers:
          - image: tf
            name: tensorflow
            resources: {}
status: {}
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("printObject (-want +got):\n%s", diff)
	}
	if err := checkOutput("xml", outputTable, outputYAML, outputJSON); err == nil || err.Error() != `-o "xml": want one of yaml, json` {
		t.Errorf("checkOutput(xml) = %v", err)
	}
}

// TestPrintJobsWaiting: a job whose replica waits on the user shows the reason beside
// its state, and only while the condition is True.
func TestPrintJobsWaiting(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	job := func(status metav1.ConditionStatus, reason string) tfv1.TFJob {
		j := tfJob("pull", "team", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeWorker: {}})
		j.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
		j.Status.State = tfv1.JobCreated
		j.Status.Conditions = []metav1.Condition{{Type: string(tfv1.JobReplicasWaiting), Status: status, Reason: reason}}
		return *j
	}
	cases := []struct {
		name string
		job  tfv1.TFJob
		want string
	}{
		{"waiting", job(metav1.ConditionTrue, tfv1.ReasonImageNotPulled), "pull   Created (ImageNotPulled)   1         0     -      60s\n"},
		{"cleared", job(metav1.ConditionFalse, tfv1.ReasonWaitsCleared), "pull   Created   1         0     -      60s\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := printJobs(&buf, []tfv1.TFJob{tc.job}, nil, nil, outputTable, false, now); err != nil {
				t.Fatal(err)
			}
			_, row, _ := strings.Cut(buf.String(), "\n")
			if diff := cmp.Diff(tc.want, row); diff != "" {
				t.Errorf("row (-want +got):\n%s", diff)
			}
		})
	}
}
