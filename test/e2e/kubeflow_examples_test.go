package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/manifests"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// runnableExample is an example of training-operator v1.9.4 that runs on this machine
// once what its image holds is given another way: the program that its Dockerfile adds
// comes from a ConfigMap at the same path, in tfk8s's TensorFlow image.
type runnableExample struct {
	// manifest is the TFJob's file under examples/tensorflow.
	manifest string
	// program is the directory the example's Dockerfile adds, with mnist_utils.py.
	program string
	// mountAt is where the Dockerfile adds it.
	mountAt string
	// entrypoint is the Dockerfile's, for a manifest that gives no command.
	entrypoint []string
	// env is what the Dockerfile sets.
	env []corev1.EnvVar
}

// runnableExamples are the v1.9.4 examples that can run here. The others cannot: v1.9.4's
// distribution_strategy/multi_worker_tfjob.yaml asks for an nvidia.com/gpu, a PVC
// and tensorflow_datasets' MNIST from the internet; v1.8.1's five are TensorFlow 1
// programs (tensorflow.examples.tutorials, tf.estimator) that TensorFlow 2.21 no longer has.
var runnableExamples = []runnableExample{
	{manifest: "simple.yaml", program: "mnist_with_summaries", mountAt: "/var/tf_mnist"},
	{manifest: "mnist_with_summaries/tf_job_mnist.yaml", program: "mnist_with_summaries", mountAt: "/var/tf_mnist"},
	{manifest: "dist-mnist/tf_job_mnist.yaml", program: "dist-mnist", mountAt: "/var/tf_dist_mnist",
		entrypoint: []string{"python", "/var/tf_dist_mnist/dist_mnist.py"},
		env:        []corev1.EnvVar{{Name: "TF_USE_LEGACY_KERAS", Value: "1"}}},
}

// testKubeflowExamplesRun runs runnableExamples side by side, each to Succeeded under
// tfk8s. Each runs as its manifest says, but for what this machine lacks: the image is
// tfk8s's TensorFlow image with the example's program mounted where its Dockerfile puts
// it; --fake_data (the programs' own flag) stands for MNIST, which is on the internet;
// --epochs=1 keeps it short; a PersistentVolumeClaim is an emptyDir.
func testKubeflowExamplesRun(ctx context.Context, t *testing.T, kubeconfig string) {
	start := time.Now()
	cs := clientset(t, kubeconfig)
	cl := kubeflowClient(t, kubeconfig)
	root := filepath.Join(testutil.ModuleDir(t, filepath.Join("..", "..", "hack", "tools", "kubeflow-training-operator"),
		"github.com/kubeflow/training-operator"), "examples", "tensorflow")
	var jobs []*kubeflowv1.TFJob
	for _, ex := range runnableExamples {
		job := exampleJob(t, root, ex)
		createExampleProgram(ctx, t, cs, root, ex, job.Namespace)
		if err := cl.Create(ctx, job); err != nil {
			t.Fatalf("%s: creating %s: %v", ex.manifest, job.Name, err)
		}
		t.Cleanup(func() { deleteExample(t, cl, cs, job) })
		jobs = append(jobs, job)
	}
	for i, job := range jobs {
		waitExample(ctx, t, cl, runnableExamples[i].manifest, job)
	}
	t.Logf("training-operator's examples ran in %v", time.Since(start).Round(time.Second))
}

// exampleJob reads the example's TFJob and gives it what this machine lacks.
func exampleJob(t *testing.T, root string, ex runnableExample) *kubeflowv1.TFJob {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ex.manifest))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.Decode(data)
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: %d objects, %v; want one TFJob", ex.manifest, len(objs), err)
	}
	job := &kubeflowv1.TFJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, job); err != nil {
		t.Fatalf("%s: %v", ex.manifest, err)
	}
	if job.Namespace == "" {
		job.Namespace = "default"
	}
	for _, rs := range job.Spec.TFReplicaSpecs {
		pod := &rs.Template.Spec
		for i := range pod.Volumes {
			if pod.Volumes[i].PersistentVolumeClaim != nil {
				pod.Volumes[i].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
			}
		}
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "example-program", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: exampleProgram(ex)}}}})
		c := &pod.Containers[0]
		c.Image = images.TensorFlow
		if len(c.Command) == 0 {
			c.Command = ex.entrypoint
		}
		c.Args = append(c.Args, "--fake_data", "--epochs=1")
		c.Env = append(c.Env, ex.env...)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "example-program", MountPath: ex.mountAt})
	}
	return job
}

// exampleProgram names the ConfigMap of the example's program.
func exampleProgram(ex runnableExample) string {
	return "example-" + strings.ReplaceAll(ex.program, "_", "-")
}

// createExampleProgram puts the Python files of the example's directory, and
// mnist_utils.py, into its ConfigMap, as its Dockerfile adds them to its image.
func createExampleProgram(ctx context.Context, t *testing.T, cs kubernetes.Interface, root string, ex runnableExample, ns string) {
	t.Helper()
	if ns != "default" {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(filepath.Join(root, ex.program, "*.py"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no program in %s (%v)", ex.manifest, ex.program, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: exampleProgram(ex)}, Data: map[string]string{}}
	for _, f := range append(files, filepath.Join(root, "mnist_utils.py")) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[filepath.Base(f)] = string(data)
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// waitExample waits until the job succeeds, and fails the test if it fails.
func waitExample(ctx context.Context, t *testing.T, cl client.Client, manifest string, job *kubeflowv1.TFJob) {
	t.Helper()
	got := &kubeflowv1.TFJob{}
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, migrateWait, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(job), got); err != nil {
			return false, err
		}
		return hasCondition(got, "Succeeded") || hasCondition(got, "Failed"), nil
	})
	if err != nil || !hasCondition(got, "Succeeded") {
		t.Errorf("%s: %s/%s did not succeed (%v): %+v", manifest, job.Namespace, job.Name, err, got.Status.Conditions)
		return
	}
	t.Logf("%s: %s/%s succeeded, replicas %v", manifest, job.Namespace, job.Name, replicaCounts(got))
}

func replicaCounts(job *kubeflowv1.TFJob) map[kubeflowv1.ReplicaType]int32 {
	m := map[kubeflowv1.ReplicaType]int32{}
	for rt, st := range job.Status.ReplicaStatuses {
		m[rt] = st.Succeeded
	}
	return m
}

// deleteExample deletes the job and waits until its pods are gone.
func deleteExample(t *testing.T, cl client.Client, cs kubernetes.Interface, job *kubeflowv1.TFJob) {
	ctx := context.Background()
	if err := cl.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %s: %v", job.Name, err)
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kubeflowv1.LabelJobName + "=" + job.Name})
		return err == nil && len(pods.Items) == 0, err
	})
	if err != nil {
		t.Errorf("pods of the deleted %s left: %v", job.Name, err)
	}
}
