package api

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// installKubeflowCRD serves tfk8s's kubeflow.org TFJob CRD.
func installKubeflowCRD(t *testing.T) {
	t.Helper()
	if err := cp.InstallKubeflowCRD(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// kfReplica is a replica spec whose containers each run image "tf".
func kfReplica(containers ...string) *kubeflowv1.ReplicaSpec {
	spec := &kubeflowv1.ReplicaSpec{}
	for _, c := range containers {
		spec.Template.Spec.Containers = append(spec.Template.Spec.Containers, corev1.Container{Name: c, Image: "tf"})
	}
	return spec
}

// kfJob is a Kubeflow TFJob with a chief and two workers, as v1.9 admits it.
func kfJob(ns, name string, mutate func(*kubeflowv1.TFJob)) *kubeflowv1.TFJob {
	job := &kubeflowv1.TFJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kubeflowv1.TFJobSpec{TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			"Chief":  kfReplica("tensorflow"),
			"Worker": kfReplica("tensorflow"),
		}},
	}
	job.Spec.TFReplicaSpecs["Worker"].Replicas = ptr.To[int32](2)
	if mutate != nil {
		mutate(job)
	}
	return job
}

// TestKubeflowTFJobsV19RefusesAreRefused: what training-operator v1.9's webhook refuses
// is refused at admission, and the error names the field.
func TestKubeflowTFJobsV19RefusesAreRefused(t *testing.T) {
	installKubeflowCRD(t)
	ns := testutil.Namespace(t, k8sClient)
	cases := []struct {
		name      string
		job       *kubeflowv1.TFJob
		wantField string
		wantMsg   string
	}{
		{"name not a DNS-1035 label", kfJob(ns, "1mnist", nil), "metadata.name", "DNS-1035"},
		{"no container named tensorflow", kfJob(ns, "j", func(j *kubeflowv1.TFJob) { j.Spec.TFReplicaSpecs["Worker"] = kfReplica("main") }),
			"spec.tfReplicaSpecs[Worker].template.spec.containers", "container with name tensorflow"},
		{"a container without an image", kfJob(ns, "j", func(j *kubeflowv1.TFJob) { j.Spec.TFReplicaSpecs["Chief"].Template.Spec.Containers[0].Image = "" }),
			"spec.tfReplicaSpecs[Chief].template.spec.containers", "must have an image"},
		{"no containers", kfJob(ns, "j", func(j *kubeflowv1.TFJob) { j.Spec.TFReplicaSpecs["PS"] = &kubeflowv1.ReplicaSpec{} }),
			"spec.tfReplicaSpecs.PS.template.spec.containers", "Required value"},
		{"chief and master", kfJob(ns, "j", func(j *kubeflowv1.TFJob) { j.Spec.TFReplicaSpecs["Master"] = kfReplica("tensorflow") }),
			"spec.tfReplicaSpecs", "more than 1 Chief or Master"},
		{"unknown replica type", kfJob(ns, "j", func(j *kubeflowv1.TFJob) { j.Spec.TFReplicaSpecs["Trainer"] = kfReplica("tensorflow") }),
			"spec.tfReplicaSpecs", "unknown replica type"},
		{"managedBy another controller", kfJob(ns, "j", func(j *kubeflowv1.TFJob) { j.Spec.RunPolicy.ManagedBy = ptr.To("example.com/other") }),
			"spec.runPolicy.managedBy", "kubeflow.org/training-operator or kueue.x-k8s.io/multikueue"},
		{"unknown cleanPodPolicy", kfJob(ns, "j", func(j *kubeflowv1.TFJob) {
			j.Spec.RunPolicy.CleanPodPolicy = ptr.To(kubeflowv1.CleanPodPolicy("Some"))
		}), "spec.runPolicy.cleanPodPolicy", "All, Running or None"},
		{"no tfReplicaSpecs", kfJob(ns, "j", func(j *kubeflowv1.TFJob) { j.Spec.TFReplicaSpecs = nil }), "spec.tfReplicaSpecs", "Required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := k8sClient.Create(context.Background(), tc.job)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), tc.wantField) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error does not name %s with %q: %v", tc.wantField, tc.wantMsg, err)
			}
		})
	}
}

// TestKubeflowTFJobsV19AdmitsAreAdmitted: replica types in any case, and v1.9's two
// managedBy values; managedBy cannot change afterwards.
func TestKubeflowTFJobsV19AdmitsAreAdmitted(t *testing.T) {
	installKubeflowCRD(t)
	ns := testutil.Namespace(t, k8sClient)
	ctx := context.Background()
	lower := kfJob(ns, "lower", func(j *kubeflowv1.TFJob) {
		j.Spec.TFReplicaSpecs = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"ps": kfReplica("tensorflow"), "worker": kfReplica("tensorflow", "sidecar")}
	})
	multi := kfJob(ns, "multi", func(j *kubeflowv1.TFJob) { j.Spec.RunPolicy.ManagedBy = ptr.To(kubeflowv1.ManagedByMultiKueue) })
	for _, job := range []*kubeflowv1.TFJob{lower, multi} {
		if err := k8sClient.Create(ctx, job); err != nil {
			t.Fatalf("%s refused: %v", job.Name, err)
		}
	}
	if multi.Spec.RunPolicy.Suspend == nil || *multi.Spec.RunPolicy.Suspend {
		t.Errorf("runPolicy.suspend %v, want the CRD's default false", multi.Spec.RunPolicy.Suspend)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"runPolicy":{"managedBy":"kubeflow.org/training-operator"}}}`))
	if err := k8sClient.Patch(ctx, multi, patch); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("changing managedBy: got %v, want Invalid: immutable", err)
	}
	patch = client.RawPatch(types.MergePatchType, []byte(`{"spec":{"runPolicy":{"managedBy":"kueue.x-k8s.io/multikueue"}}}`))
	if err := k8sClient.Patch(ctx, lower, patch); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("setting managedBy: got %v, want Invalid: immutable", err)
	}
}
