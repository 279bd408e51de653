package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfscheme "github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/trainingoperator"
)

// migrateWait bounds each wait of the migration test: TensorFlow's processes share two
// cores, each taking seconds to import TensorFlow.
const migrateWait = 6 * time.Minute

// startTrainingOperator runs training-operator on the host, its TFJob controller only,
// against the cluster, as its Deployment would (trainingoperator says how). It returns
// a function that stops it, with SIGTERM: v1.9.4 then exits with status 2 once its
// manager has stopped, which the test logs and takes as stopped.
func startTrainingOperator(ctx context.Context, t *testing.T, cl client.Client, binary, kubeconfig string) (stop func()) {
	t.Helper()
	t.Cleanup(func() {
		_ = cl.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: trainingoperator.Secret}})
		_ = cl.Delete(context.Background(), &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: trainingoperator.Webhook}})
	})
	op, err := trainingoperator.Start(ctx, cl, trainingoperator.Options{Binary: binary, Kubeconfig: kubeconfig, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		if !op.Stop() {
			t.Errorf("training-operator did not exit within 30s of SIGTERM")
		}
		t.Logf("training-operator exited on SIGTERM (%v); its log ends:\n%s", op.Err(), op.LogTail(6))
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			out, _ := os.ReadFile(op.LogPath())
			t.Logf("training-operator's log:\n%s", out)
		}
	})
	return stop
}

// kubeflowClient reaches the cluster's kubeflow.org and core objects.
func kubeflowClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: tfscheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// waitMigrateJob waits, up to migrateWait, until done holds of the job and its pods.
func waitMigrateJob(ctx context.Context, t *testing.T, cl client.Client, cs kubernetes.Interface, what string, done func(*kubeflowv1.TFJob, []corev1.Pod) bool) {
	t.Helper()
	start := time.Now()
	job := &kubeflowv1.TFJob{}
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, time.Second, migrateWait, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: migrateJob}, job); err != nil {
			return false, err
		}
		list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: kubeflowv1.LabelJobName + "=" + migrateJob})
		if err != nil {
			return false, err
		}
		pods = list.Items
		return done(job, pods), nil
	})
	if err != nil {
		t.Fatalf("waiting until %s: %v; conditions %+v, pods %v", what, err, job.Status.Conditions, podSummary(pods))
	}
	t.Logf("%s after %v", what, time.Since(start).Round(time.Second))
}

func podSummary(pods []corev1.Pod) []string {
	var s []string
	for _, p := range pods {
		s = append(s, fmt.Sprintf("%s %s %v", p.Name, p.Status.Phase, p.Labels))
	}
	return s
}

func allPods(pods []corev1.Pod, ok func(corev1.Pod) bool) bool {
	for _, p := range pods {
		if !ok(p) {
			return false
		}
	}
	return true
}

func hasCondition(job *kubeflowv1.TFJob, typ kubeflowv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podUIDs maps each pod of the job to its UID.
func podUIDs(ctx context.Context, t *testing.T, cs kubernetes.Interface) map[string]string {
	t.Helper()
	list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: kubeflowv1.LabelJobName + "=" + migrateJob})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, p := range list.Items {
		uids[p.Name] = string(p.UID)
	}
	return uids
}

// execIn runs command in the first container of the pod namespace/pod, as kubectl exec
// does, and returns its standard output.
func execIn(ctx context.Context, kubeconfig string, cs *kubernetes.Clientset, namespace, pod string, command ...string) (string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return stdout.String(), fmt.Errorf("%w (stderr %q)", err, stderr.String())
	}
	return stdout.String(), nil
}

// checkOperatorServicesKept wants training-operator's per-replica Services still there
// after the job succeeded, adopted (tfk8s's job-name label on them), beside tfk8s's
// headless one: the pods' TF_CONFIG names them, so tfk8s keeps them and leaves them to
// the job's garbage collection (docs/kubeflow.md).
func checkOperatorServicesKept(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	for _, name := range []string{"-chief-0", "-ps-0", "-worker-0", "-worker-1", ""} {
		svc, err := cs.CoreV1().Services("default").Get(ctx, migrateJob+name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("Service %s%s: %v", migrateJob, name, err)
		} else if svc.Labels["tfk8s.io/job-name"] != migrateJob {
			t.Errorf("Service %s%s has labels %v, want tfk8s.io/job-name: %s (adopted)", migrateJob, name, svc.Labels, migrateJob)
		}
	}
}

// deleteMigrateJob deletes the job and its program, and waits until its pods are gone,
// so that the suite's next jobs start on a clean namespace.
func deleteMigrateJob(ctx context.Context, t *testing.T, cl client.Client, cs kubernetes.Interface) {
	t.Helper()
	job := &kubeflowv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: migrateJob}}
	if err := cl.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, migrateJob+"-program", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return len(podUIDs(ctx, t, cs)) == 0, nil
	})
	if err != nil {
		t.Errorf("pods of the deleted %s left: %v", migrateJob, err)
	}
}
