package api

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestValidTFJobGetsDefaults: a manifest that leaves out runPolicy altogether, as a
// user's YAML does, is stored with the defaults written in, so `kubectl get -o yaml`
// shows what the job runs with.
func TestValidTFJobGetsDefaults(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	job := validJob(ns).Evaluator().Obj()
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas = nil
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].RestartPolicy = ""
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(raw, "spec", "runPolicy")
	if err := k8sClient.Create(context.Background(), &unstructured.Unstructured{Object: raw}); err != nil {
		t.Fatalf("creating a valid TFJob: %v", err)
	}
	got := &tfv1.TFJob{}
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(job), got); err != nil {
		t.Fatal(err)
	}
	worker := got.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker]
	type defaults struct {
		WorkerReplicas int32
		RestartPolicy  tfv1.RestartPolicy
		CleanPodPolicy tfv1.CleanPodPolicy
		StartupPolicy  tfv1.StartupPolicy
		Networking     tfv1.NetworkingMode
		BackoffLimit   int32
	}
	want := defaults{1, tfv1.RestartPolicyNever, tfv1.CleanPodPolicyRunning, tfv1.StartupPolicyParallel, tfv1.NetworkingModeDNS, 6}
	gotDefaults := defaults{ptr.Deref(worker.Replicas, -1), worker.RestartPolicy,
		ptr.Deref(got.Spec.RunPolicy.CleanPodPolicy, ""), got.Spec.StartupPolicy, got.Spec.Networking.Mode,
		ptr.Deref(got.Spec.RunPolicy.BackoffLimit, -1)}
	if diff := cmp.Diff(want, gotDefaults); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestLongestNamesAreAccepted(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	for _, job := range []*tfv1.TFJob{
		testutil.MakeTFJob(strings.Repeat("a", 51), ns).Workers(1).Evaluator().Obj(),    // -evaluator-0
		testutil.MakeTFJob(strings.Repeat("b", 52), ns).Workers(1000).Obj(),             // -worker-999
		testutil.MakeTFJob(strings.Repeat("c", 54), ns).Workers(1).Obj(),                // -worker-0
		testutil.MakeTFJob(strings.Repeat("d", 55), ns).Replicas("PS", 1).Chief().Obj(), // -chief-0
	} {
		if err := k8sClient.Create(context.Background(), job); err != nil {
			t.Errorf("TFJob with a %d-character name refused: %v", len(job.Name), err)
		}
	}
}

func TestUpdates(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	cases := []struct {
		name    string
		mutate  func(*tfv1.TFJob)
		wantErr string // "" = accepted
	}{
		{
			name: "change a replica template",
			mutate: func(j *tfv1.TFJob) {
				j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Image = "other"
			},
			wantErr: "tfReplicaSpecs is immutable",
		},
		{
			name:    "scale the workers",
			mutate:  func(j *tfv1.TFJob) { j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas = ptr.To[int32](5) },
			wantErr: "tfReplicaSpecs is immutable",
		},
		{
			name: "add an evaluator",
			mutate: func(j *tfv1.TFJob) {
				j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeEvaluator] = j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeChief]
			},
			wantErr: "tfReplicaSpecs is immutable",
		},
		{
			name:    "change the code",
			mutate:  func(j *tfv1.TFJob) { j.Spec.Code.Source = "s3://tfk8s/code/other.tar.gz" },
			wantErr: "spec.code is immutable",
		},
		{
			name:    "remove the artifacts",
			mutate:  func(j *tfv1.TFJob) { j.Spec.Artifacts = nil },
			wantErr: "spec.artifacts is immutable",
		},
		{
			name:    "switch to host networking",
			mutate:  func(j *tfv1.TFJob) { j.Spec.Networking.Mode = tfv1.NetworkingModeHostNetwork },
			wantErr: "spec.networking is immutable",
		},
		{
			name:   "suspend",
			mutate: func(j *tfv1.TFJob) { j.Spec.RunPolicy.Suspend = ptr.To(true) },
		},
		{
			name: "extend the deadline and TTL",
			mutate: func(j *tfv1.TFJob) {
				j.Spec.RunPolicy.ActiveDeadlineSeconds = ptr.To[int64](7200)
				j.Spec.RunPolicy.TTLSecondsAfterFinished = ptr.To[int32](60)
			},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := validJob(ns).Code("s3://tfk8s/code/x.tar.gz").Artifacts("s3://tfk8s/runs", "/ckpt").Obj()
			job.Name = job.Name + "-" + string(rune('a'+i))
			if err := k8sClient.Create(context.Background(), job); err != nil {
				t.Fatalf("creating: %v", err)
			}
			tc.mutate(job)
			err := k8sClient.Update(context.Background(), job)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("update refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("update accepted; want it refused with %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error does not contain %q:\n%v", tc.wantErr, err)
			}
		})
	}
}
