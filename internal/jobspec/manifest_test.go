package jobspec

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

func TestDecodeKubeflowManifest(t *testing.T) {
	data, err := os.ReadFile("testdata/kubeflow-dist-mnist.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"sidecar.istio.io/inject": "false"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "tensorflow",
			Image:     "kubeflow/tf-dist-mnist-test:latest",
			Ports:     []corev1.ContainerPort{{Name: "tfjob-port", ContainerPort: 2222}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		}}},
	}
	workerTemplate := *template.DeepCopy()
	workerTemplate.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	want := &tfv1.TFJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "tfk8s.io/v1alpha1", Kind: "TFJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "dist-mnist-for-e2e-test"},
		Spec: tfv1.TFJobSpec{
			RunPolicy: tfv1.RunPolicy{CleanPodPolicy: ptr.To(tfv1.CleanPodPolicyNone)},
			TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
				tfv1.ReplicaTypePS:     {Replicas: ptr.To[int32](2), RestartPolicy: tfv1.RestartPolicyNever, Template: template},
				tfv1.ReplicaTypeWorker: {Replicas: ptr.To[int32](4), RestartPolicy: tfv1.RestartPolicyNever, Template: workerTemplate},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
}

func TestDecodeManifestConverts(t *testing.T) {
	cases := []struct {
		name     string
		manifest string
		want     *tfv1.TFJob
	}{{
		name: "lower-case replica types and Kubeflow's managedBy",
		manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: lower, namespace: team}
spec:
  runPolicy: {managedBy: kubeflow.org/training-operator, backoffLimit: 2}
  tfReplicaSpecs:
    ps: {replicas: 1, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}
    worker: {replicas: 2, restartPolicy: ExitCode, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}
status:
  conditions: []
`,
		want: &tfv1.TFJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: "tfk8s.io/v1alpha1", Kind: "TFJob"},
			ObjectMeta: metav1.ObjectMeta{Name: "lower", Namespace: "team"},
			Spec: tfv1.TFJobSpec{
				RunPolicy: tfv1.RunPolicy{BackoffLimit: ptr.To[int32](2)},
				TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
					tfv1.ReplicaTypePS:     replica(1, corev1.Container{Name: "tensorflow", Image: "tf"}),
					tfv1.ReplicaTypeWorker: {Replicas: ptr.To[int32](2), RestartPolicy: tfv1.RestartPolicyExitCode, Template: replica(1, corev1.Container{Name: "tensorflow", Image: "tf"}).Template},
				},
			},
		},
	}, {
		name: "a tfk8s manifest, as JSON, with another controller's managedBy kept",
		manifest: `{"apiVersion": "tfk8s.io/v1alpha1", "kind": "TFJob", "metadata": {"name": "native"},
  "spec": {"runPolicy": {"managedBy": "example.com/other"},
           "tfReplicaSpecs": {"Chief": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}}}}`,
		want: &tfv1.TFJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: "tfk8s.io/v1alpha1", Kind: "TFJob"},
			ObjectMeta: metav1.ObjectMeta{Name: "native"},
			Spec: tfv1.TFJobSpec{
				RunPolicy: tfv1.RunPolicy{ManagedBy: ptr.To("example.com/other")},
				TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
					tfv1.ReplicaTypeChief: {Template: replica(1, corev1.Container{Name: "tensorflow", Image: "tf"}).Template},
				},
			},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeManifestErrors(t *testing.T) {
	const worker = `{replicas: 1, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}`
	cases := []struct {
		name     string
		manifest string
		want     string // a substring of the error
	}{{
		name:     "a Kubeflow field tfk8s does not know",
		manifest: "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: a}\nspec:\n  elasticPolicy: {maxReplicas: 3}\n  tfReplicaSpecs: {Worker: " + worker + "}\n",
		want:     `field tfk8s cannot honour: unknown field "spec.elasticPolicy"`,
	}, {
		name:     "a misspelt container field",
		manifest: "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker: {template: {spec: {containers: [{name: tensorflow, imagePullPolicyy: Always}]}}}\n",
		want:     `unknown field "spec.tfReplicaSpecs.Worker.template.spec.containers[0].imagePullPolicyy"`,
	}, {
		name:     "an unknown replica type",
		manifest: "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: a}\nspec:\n  tfReplicaSpecs: {Launcher: " + worker + "}\n",
		want:     "field spec.tfReplicaSpecs.Launcher: unknown replica type (want one of Chief, Master, PS, Worker, Evaluator)",
	}, {
		name:     "a replica type given twice",
		manifest: "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: a}\nspec:\n  tfReplicaSpecs: {worker: " + worker + ", Worker: " + worker + "}\n",
		want:     "replica type Worker is given twice",
	}, {
		name:     "another Kubeflow kind",
		manifest: "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: a}\n",
		want:     `kind "PyTorchJob": want TFJob`,
	}, {
		name:     "an older Kubeflow version",
		manifest: "apiVersion: kubeflow.org/v1beta2\nkind: TFJob\nmetadata: {name: a}\n",
		want:     `apiVersion "kubeflow.org/v1beta2": want tfk8s.io/v1alpha1 or kubeflow.org/v1`,
	}, {
		name:     "two documents",
		manifest: "apiVersion: tfk8s.io/v1alpha1\nkind: TFJob\n---\napiVersion: tfk8s.io/v1alpha1\nkind: TFJob\n",
		want:     "want one TFJob, found 2 documents",
	}, {
		name:     "not YAML",
		manifest: "apiVersion: [\n",
		want:     "parsing manifest",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.manifest))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
