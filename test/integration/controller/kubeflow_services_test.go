package controller

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestKubeflowJobWithTrainingOperatorServices: a kubeflow.org job annotated
// tfk8s.io/training-operator-services gets a Service per replica, named and selecting as
// training-operator's, owned by the job, and TF_CONFIG naming those Services.
func TestKubeflowJobWithTrainingOperatorServices(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startKubeflowController(t)
	ctx := context.Background()
	job := makeKubeflowJob(ns, "named", 1, 2)
	job.Annotations = map[string]string{kubeflowv1.AnnotationTrainingOperatorServices: "true"}
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, "named", "named-chief-0", "named-ps-0", "named-worker-0", "named-worker-1")
	want := map[string][]string{
		"chief":  {"named-chief-0." + ns + ".svc:2222"},
		"ps":     {"named-ps-0." + ns + ".svc:2222"},
		"worker": {"named-worker-0." + ns + ".svc:2222", "named-worker-1." + ns + ".svc:2222"},
	}
	if diff := cmp.Diff(want, podTFConfigCluster(t, pods["named-worker-1"])); diff != "" {
		t.Errorf("TF_CONFIG's cluster of named-worker-1 (-want +got):\n%s", diff)
	}
	for _, r := range []struct{ name, rt, index string }{
		{"named-chief-0", "chief", "0"}, {"named-ps-0", "ps", "0"}, {"named-worker-0", "worker", "0"}, {"named-worker-1", "worker", "1"},
	} {
		waitService(t, ns, r.name, job.UID)
		svc := &corev1.Service{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.name}, svc); err != nil {
			t.Fatal(err)
		}
		wantSelector := map[string]string{
			"training.kubeflow.org/job-name": "named", "training.kubeflow.org/operator-name": "tfjob-controller",
			"training.kubeflow.org/replica-type": r.rt, "training.kubeflow.org/replica-index": r.index,
		}
		if diff := cmp.Diff(wantSelector, svc.Spec.Selector); diff != "" {
			t.Errorf("Service %s selects (-want +got):\n%s", r.name, diff)
		}
	}
}

// TestKubeflowJobAdoptedKeepsTrainingOperatorNames: a job whose pods tfk8s adopts from
// training-operator is annotated to keep training-operator's names, training-operator's
// Services are adopted (same UIDs), and a pod tfk8s re-creates names its peers by them.
func TestKubeflowJobAdoptedKeepsTrainingOperatorNames(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	if err := cp.InstallKubeflowCRD(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job := makeKubeflowJob(ns, "handed", 1, 1)
	delete(job.Spec.TFReplicaSpecs, "Chief")
	for _, spec := range job.Spec.TFReplicaSpecs {
		spec.RestartPolicy = "OnFailure" // a deleted pod is re-created, not the job failed
	}
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	svcUIDs := map[string]types.UID{}
	for _, r := range []struct{ name, rt, role string }{{"handed-ps-0", "ps", ""}, {"handed-worker-0", "worker", "master"}} {
		meta := trainingOperatorMeta(ns, job, r.name, r.rt, r.role)
		delete(meta.Labels, "training.kubeflow.org/job-role") // not on v1.9's Services
		svc := &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: meta.Labels,
			Ports: []corev1.ServicePort{{Name: "tfjob-port", Port: 2222}}}}
		pod := &corev1.Pod{ObjectMeta: trainingOperatorMeta(ns, job, r.name, r.rt, r.role),
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "tensorflow", Image: "tf"}}}}
		for _, obj := range []client.Object{svc, pod} {
			if err := k8sClient.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		svcUIDs[r.name] = svc.UID
		kubelet.SetRunning(t, ns, r.name)
	}

	startKubeflowReconciler(t)
	pods := waitPods(t, ns, "handed", "handed-ps-0", "handed-worker-0") // by tfk8s's label: adopted
	testutil.Eventually(t, "the job annotated "+kubeflowv1.AnnotationTrainingOperatorServices+" and "+kubeflowv1.AnnotationAdopted, func(ctx context.Context) (bool, error) {
		kf, err := getKubeflowJob(ctx, ns, "handed")
		return err == nil && kf.Annotations[kubeflowv1.AnnotationTrainingOperatorServices] == "true" &&
			kf.Annotations[kubeflowv1.AnnotationAdopted] == "true", err
	})
	for name, uid := range svcUIDs {
		testutil.Eventually(t, "Service "+name+" adopted", func(ctx context.Context) (bool, error) {
			svc := &corev1.Service{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
				return false, err
			}
			if svc.UID != uid {
				t.Fatalf("Service %s was re-created, not adopted", name)
			}
			return svc.Labels["tfk8s.io/job-name"] == "handed", nil
		})
	}

	// The PS is lost; the pod tfk8s creates in its place names its peers as the
	// adopted worker does, by training-operator's Services.
	if err := k8sClient.Delete(ctx, pods["handed-ps-0"]); err != nil {
		t.Fatal(err)
	}
	waitReplaced(t, ns, "handed", "handed-ps-0", pods["handed-ps-0"].UID)
	now, err := jobPods(ctx, ns, "handed")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"ps": {"handed-ps-0." + ns + ".svc:2222"}, "worker": {"handed-worker-0." + ns + ".svc:2222"}}
	if diff := cmp.Diff(want, podTFConfigCluster(t, now["handed-ps-0"])); diff != "" {
		t.Errorf("TF_CONFIG's cluster of the re-created handed-ps-0 (-want +got):\n%s", diff)
	}
}

// podTFConfigCluster is the cluster of the TF_CONFIG in the pod's tensorflow container.
func podTFConfigCluster(t *testing.T, pod *corev1.Pod) map[string][]string {
	t.Helper()
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if c.Name == "tensorflow" && e.Name == "TF_CONFIG" {
				var cfg struct {
					Cluster map[string][]string `json:"cluster"`
				}
				if err := json.Unmarshal([]byte(e.Value), &cfg); err != nil {
					t.Fatalf("TF_CONFIG of %s: %v", pod.Name, err)
				}
				return cfg.Cluster
			}
		}
	}
	t.Fatalf("%s has no TF_CONFIG", pod.Name)
	return nil
}

// trainingOperatorMeta is the metadata training-operator gave the pod of that name of
// the job: its labels, and the job's controller reference.
func trainingOperatorMeta(ns string, job *kubeflowv1.TFJob, name, rt, role string) metav1.ObjectMeta {
	labels := map[string]string{"training.kubeflow.org/job-name": job.Name, "training.kubeflow.org/replica-type": rt,
		"training.kubeflow.org/replica-index": "0", "training.kubeflow.org/operator-name": "tfjob-controller"}
	if role != "" {
		labels["training.kubeflow.org/job-role"] = role
	}
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "kubeflow.org/v1", Kind: "TFJob", Name: job.Name, UID: job.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}
}
