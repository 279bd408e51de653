package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// ownerRef is the controller reference every object of job "mnist" (UID "uid-1") carries.
var ownerRef = metav1.OwnerReference{
	APIVersion: "tfk8s.io/v1alpha1", Kind: "TFJob", Name: "mnist", UID: "uid-1",
	Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
}

// gangJob is job "mnist" with 1 PS and 2 workers, each asking for 1 CPU and 1Gi (the
// workers also limit one GPU they do not request), and the given scheduling policy.
func gangJob(sp *tfv1.SchedulingPolicy) *tfv1.TFJob {
	job := testutil.MakeTFJob("mnist", "ml").UID("uid-1").PS(1).Workers(2).Obj()
	for rt, spec := range job.Spec.TFReplicaSpecs {
		c := &spec.Template.Spec.Containers[0]
		c.Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		}
		if rt == tfv1.ReplicaTypeWorker {
			c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		}
	}
	job.Spec.RunPolicy.SchedulingPolicy = sp
	return job
}

// buildPod is ConstructPod for a replica that must build.
func buildPod(t *testing.T, job *tfv1.TFJob, rt tfv1.ReplicaType, index int32, opts PodOptions) *corev1.Pod {
	t.Helper()
	pod, err := ConstructPod(job, rt, index, opts)
	if err != nil {
		t.Fatalf("ConstructPod(%s, %d): %v", rt, index, err)
	}
	return pod
}

// agentJob is a two-worker job with code, data and artifacts: its pods run the agent.
func agentJob() *tfv1.TFJob {
	job := testutil.MakeTFJob("mnist", "ml").Workers(2).
		Code("s3://bucket/code/sha256-abc.tar.gz").Artifacts("s3://bucket/runs/", "/workspace/model").Obj()
	job.Spec.Artifacts.Interval = &metav1.Duration{Duration: time.Minute}
	job.Spec.Data = []tfv1.DataSource{{Source: "s3://bucket/mnist/", Path: "/data"}}
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Args = []string{"--epochs=3"}
	return job
}
