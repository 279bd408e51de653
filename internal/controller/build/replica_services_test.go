package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/fixtures"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// withTrainingOperatorServices is the job annotated to keep training-operator's names.
func withTrainingOperatorServices(job *tfv1.TFJob) *tfv1.TFJob {
	job.Annotations = map[string]string{kubeflowv1.AnnotationTrainingOperatorServices: "true"}
	return job
}

// TestConstructReplicaServices: a Service per replica, named and selecting as
// training-operator did, owned by the kubeflow.org job.
func TestConstructReplicaServices(t *testing.T) {
	job := withTrainingOperatorServices(fixtures.KubeflowModel())
	withPort(job, tfv1.ReplicaTypePS, 3333)
	owner := metav1.OwnerReference{APIVersion: "kubeflow.org/v1", Kind: "TFJob", Name: "mnist", UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	svc := func(name, rt, index string, port int32) *corev1.Service {
		selector := map[string]string{
			"training.kubeflow.org/operator-name": "tfjob-controller", "training.kubeflow.org/job-name": "mnist",
			"training.kubeflow.org/replica-type": rt, "training.kubeflow.org/replica-index": index,
		}
		labels := map[string]string{"tfk8s.io/job-name": "mnist"}
		for k, v := range selector {
			labels[k] = v
		}
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml", Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.ServiceSpec{
				ClusterIP: corev1.ClusterIPNone, Selector: selector, PublishNotReadyAddresses: true,
				Ports: []corev1.ServicePort{{Name: "tfjob-port", Port: port, Protocol: corev1.ProtocolTCP}},
			},
		}
	}
	want := []*corev1.Service{
		svc("mnist-ps-0", "ps", "0", 3333),
		svc("mnist-worker-0", "worker", "0", 2222),
		svc("mnist-worker-1", "worker", "1", 2222),
	}
	if diff := cmp.Diff(want, ReplicaServices(job)); diff != "" {
		t.Errorf("Services (-want +got):\n%s", diff)
	}
}

// TestServicePerReplica: only a kubeflow.org job annotated "true" asks for them.
func TestServicePerReplica(t *testing.T) {
	tfk8s := testutil.MakeTFJob("mnist", "ml").PS(1).Workers(2).Obj()
	cases := []struct {
		name string
		job  *tfv1.TFJob
		want bool
	}{
		{"kubeflow.org, annotated", withTrainingOperatorServices(fixtures.KubeflowModel()), true},
		{"kubeflow.org, not annotated", fixtures.KubeflowModel(), false},
		{"kubeflow.org, annotated false", func() *tfv1.TFJob {
			job := fixtures.KubeflowModel()
			job.Annotations = map[string]string{kubeflowv1.AnnotationTrainingOperatorServices: "false"}
			return job
		}(), false},
		{"tfk8s.io, annotated", withTrainingOperatorServices(tfk8s), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ServicePerReplica(tc.job); got != tc.want {
				t.Errorf("servicePerReplica = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTFConfigWithTrainingOperatorServices: TF_CONFIG names each replica by its own
// Service, <job>-<type>-<index>.<namespace>.svc, as training-operator's did; the
// cluster domain follows, as training-operator's custom cluster domain did.
func TestTFConfigWithTrainingOperatorServices(t *testing.T) {
	job := withTrainingOperatorServices(fixtures.KubeflowModel())
	cases := []struct {
		name string
		opts AddressOptions
		want tfConfigJSON
	}{
		{
			name: "no cluster domain",
			want: tfConfigJSON{Cluster: map[string]any{
				"ps":     list("mnist-ps-0.ml.svc:2222"),
				"worker": list("mnist-worker-0.ml.svc:2222", "mnist-worker-1.ml.svc:2222"),
			}, Task: task("worker", 1), Environment: "cloud"},
		},
		{
			name: "cluster domain",
			opts: AddressOptions{ClusterDomain: "cluster.local"},
			want: tfConfigJSON{Cluster: map[string]any{
				"ps":     list("mnist-ps-0.ml.svc.cluster.local:2222"),
				"worker": list("mnist-worker-0.ml.svc.cluster.local:2222", "mnist-worker-1.ml.svc.cluster.local:2222"),
			}, Task: task("worker", 1), Environment: "cloud"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NewTFConfigs(job, tc.opts, DefaultCompactTFConfigAbove).For(tfv1.ReplicaTypeWorker, 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, decodeTFConfig(t, got)); diff != "" {
				t.Errorf("TF_CONFIG (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAdoptedJobsPodsJoinNoGang: a pod tfk8s re-creates for a job adopted from
// training-operator joins no gang group (the adopted pods are in none, so the group would
// never reach its quorum); the same job not adopted, and a tfk8s.io job carrying the
// annotation, still join theirs.
func TestAdoptedJobsPodsJoinNoGang(t *testing.T) {
	native := PodOptions{Gang: GangOptions{DefaultProvider: tfv1.GangProviderNative}}
	adoptedJob := fixtures.KubeflowModel()
	adoptedJob.Annotations = map[string]string{kubeflowv1.AnnotationAdopted: "true"}
	ownJob := testutil.MakeTFJob("mnist", "ml").UID("uid-1").PS(1).Workers(2).Obj()
	ownJob.Annotations = map[string]string{kubeflowv1.AnnotationAdopted: "true"}
	group := &corev1.PodSchedulingGroup{PodGroupName: ptr.To("mnist")}
	for _, tc := range []struct {
		name string
		job  *tfv1.TFJob
		want *corev1.PodSchedulingGroup
	}{
		{"adopted from training-operator", adoptedJob, nil},
		{"kubeflow.org, not adopted", fixtures.KubeflowModel(), group},
		{"tfk8s.io with the annotation", ownJob, group},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := buildPod(t, tc.job, tfv1.ReplicaTypeWorker, 1, native)
			if diff := cmp.Diff(tc.want, pod.Spec.SchedulingGroup); diff != "" {
				t.Errorf("schedulingGroup (-want +got):\n%s", diff)
			}
		})
	}
}
