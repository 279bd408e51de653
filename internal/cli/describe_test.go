package cli

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfconfig"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func TestDescribeJob(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tf := corev1.Container{Name: "tensorflow", Image: "tf:2.16", Command: []string{"python3", "train.py"}}
	withGPUs := func(c corev1.Container) corev1.Container {
		c.Resources.Limits = corev1.ResourceList{tfjob.GPUResource: resource.MustParse("2")}
		return c
	}
	job := tfJob("mnist", "team", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
		tfv1.ReplicaTypePS:     replica(1, tf),
		tfv1.ReplicaTypeWorker: replica(3, withGPUs(tf)),
	})
	job.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	job.Spec.Code = &tfv1.Code{Source: "s3://bkt/code/sha256-ab.tar.gz", Path: "/workspace"}
	job.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://bkt/runs", Paths: []string{"/workspace/model"}, Interval: &metav1.Duration{Duration: time.Minute}}
	job.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "tfk8s-s3-0123456789"}}
	job.Status.State = tfv1.JobRunning
	job.Status.Conditions = []metav1.Condition{{Type: "Running", Status: "True", Reason: tfv1.ReasonRunning, Message: "all replicas run", LastTransitionTime: metav1.NewTime(now.Add(-10 * time.Minute))}}
	job.Status.ReplicaStatuses = map[tfv1.ReplicaType]*tfv1.ReplicaStatus{
		tfv1.ReplicaTypeWorker: {Active: 2, Restarts: 1, Disruptions: 1, LastFailure: &tfv1.ReplicaFailure{Index: 1, Pod: "mnist-worker-1", ExitCode: 137, Reason: "OOMKilled"}},
	}
	pod := func(typ, index, node string, phase corev1.PodPhase, tfConfig string, status corev1.ContainerStatus) corev1.Pod {
		c := tf
		if typ == "worker" {
			c = withGPUs(tf)
		}
		c.Env = []corev1.EnvVar{{Name: "TF_CONFIG", Value: tfConfig}}
		status.Name = "tensorflow"
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "mnist-" + typ + "-" + index, Labels: map[string]string{tfv1.LabelReplicaType: typ, tfv1.LabelReplicaIndex: index}, CreationTimestamp: job.CreationTimestamp},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{c}},
			Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{status}},
		}
	}
	pods := []corev1.Pod{
		pod("ps", "0", "node-a", corev1.PodRunning, `{"task":{"type":"ps","index":0}}`, corev1.ContainerStatus{}),
		pod("worker", "0", "node-b", corev1.PodRunning, `{"task":{"type":"worker","index":0}}`, corev1.ContainerStatus{}),
		pod("worker", "1", "node-c", corev1.PodRunning, `{"task":{"type":"worker","index":1}}`, corev1.ContainerStatus{
			RestartCount:         1,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}},
		}),
	}
	events := []eventsv1.Event{{Type: "Normal", Reason: tfv1.ReasonCreated, Note: "TFJob team/mnist is created", ReportingController: "tfk8s-controller", EventTime: metav1.NewMicroTime(now.Add(-time.Hour))}}

	at := func(ago time.Duration) *time.Time { t := now.Add(-ago); return &t }
	attempts := fromS3{replicas: []replicaAttempts{
		{replica: "ps-0", err: errors.New("reading the manifest: access denied")},
		{replica: "worker-0"},
		{replica: "worker-1", attempts: []storage.Attempt{
			{Number: 1, Pod: "mnist-worker-1", Start: *at(50 * time.Minute), End: at(21 * time.Minute), ExitCode: ptr.To(137), Reason: "Signaled", Message: "killed by SIGKILL"},
			{Number: 2, Pod: "mnist-worker-1", Start: *at(20 * time.Minute)},
		}},
	}}

	var buf bytes.Buffer
	if err := describeJob(&buf, job, pods, events, attempts, "worker-1", now); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Name:             mnist\n",
		"State:            Running\n",
		"Code:             s3://bkt/code/sha256-ab.tar.gz -> /workspace\n",
		"Artifacts:        s3://bkt/runs/team/mnist/<replica>/artifacts/\n",
		"  Paths:          /workspace/model\n",
		"Logs:             s3://bkt/runs/team/mnist/<replica>/attempts/<n>/logs/\n",
		"Storage Secret:   tfk8s-s3-0123456789\n",
		// Two of three workers' pods are bound: 4 of 6 GPUs held.
		"GPUs:             4 allocated of 6 requested\n",
		"  TYPE     DESIRED   ACTIVE   SUCCEEDED   FAILED   RESTARTS   DISRUPTIONS   GPUS   LAST FAILURE\n",
		"  PS       1         0        0           0        0          0             -      <none>\n",
		"  Worker   3         2        0           0        1          1             4/6    mnist-worker-1 exit code 137 OOMKilled\n",
		"  mnist-ps-0       ps-0       Running   node-a   0          -                60m\n",
		"  mnist-worker-1   worker-1   Running   node-c   1          137 OOMKilled    60m\n",
		"Attempts:\n  REPLICA    ATTEMPT   POD              STARTED   ENDED       EXIT CODE   REASON\n",
		"  ps-0       -         -                -         -           -           <unknown: reading the manifest: access denied>\n",
		"  worker-0   -         -                -         -           -           <none stored yet>\n",
		"  worker-1   1         mnist-worker-1   50m ago   21m ago     137         Signaled: killed by SIGKILL\n",
		"  worker-1   2         mnist-worker-1   20m ago   <running>   -           <none>\n",
		"  Running   True     TFJobRunning   10m   all replicas run\n",
		"  Normal   TFJobCreated   60m   tfk8s-controller   TFJob team/mnist is created\n",
		"TF_CONFIG (worker-1):\n  {\n    \"task\": {\n      \"type\": \"worker\",\n      \"index\": 1\n    }\n  }\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe output lacks %q; output:\n%s", want, out)
		}
	}

	if err := describeJob(&bytes.Buffer{}, job, pods, nil, fromS3{}, "worker-7", now); err == nil || err.Error() != "--replica worker-7: the job has no pod for this replica" {
		t.Errorf("describe --replica worker-7: error = %v", err)
	}
}

// A large job's pods carry the cluster in place of TF_CONFIG: describe shows the
// TF_CONFIG the agent composes from it, which is what the program reads.
func TestDescribeComposedTFConfig(t *testing.T) {
	cluster := tfconfig.Cluster{Job: "big", Namespace: "team", Replicas: []tfconfig.Replicas{
		{Type: tfv1.ReplicaTypePS, Count: 1, Port: 2222},
		{Type: tfv1.ReplicaTypeWorker, Count: 2, Port: 2222},
	}}
	encoded, err := cluster.Encode()
	if err != nil {
		t.Fatal(err)
	}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "big-worker-1", Labels: map[string]string{tfv1.LabelReplicaType: "worker", tfv1.LabelReplicaIndex: "1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow", Env: []corev1.EnvVar{
			{Name: tfconfig.EnvCluster, Value: encoded}, {Name: tfjob.EnvReplica, Value: "worker-1"},
		}}}},
	}
	var out bytes.Buffer
	if err := jobs.WriteTFConfig(&out, []corev1.Pod{pod}, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"big-worker-1.big.team.svc:2222"`, `"type": "worker"`, `"index": 1`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe shows:\n%s\nwant it to contain %s", out.String(), want)
		}
	}
	pod.Spec.Containers[0].Env[0].Value = "{not json"
	if err := jobs.WriteTFConfig(&out, []corev1.Pod{pod}, ""); err == nil || !strings.Contains(err.Error(), "big-worker-1") {
		t.Errorf("a cluster that does not decode: error %v, want one naming the pod", err)
	}
}

// A job that stores nothing in S3 says so: nothing of it outlives its pods.
func TestDescribeSaysNothingIsKept(t *testing.T) {
	job := testutil.MakeTFJob("bare", "team").Workers(1).Obj()
	var out bytes.Buffer
	if err := describeJob(&out, job, nil, nil, fromS3{}, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if want := regexp.MustCompile(`(?m)^Kept:\s+nothing: the job has no spec.artifacts`); !want.MatchString(out.String()) {
		t.Errorf("describe shows:\n%s\nwant it to match %s", out.String(), want)
	}
}
