package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
)

const (
	// migrateJob is the kubeflow.org job training-operator starts and tfk8s finishes.
	migrateJob = "kf-migrate"
	// migratePods is its number of pods: a chief, a PS and two workers.
	migratePods = 4
	// migrateGate is the file that lets the chief start training: the test creates it
	// once tfk8s has adopted every pod, so that the job is mid-run at the hand-over,
	// whatever the machine's speed, and trains under tfk8s through the PS and workers
	// training-operator started.
	migrateGate = "/gate/handed-over"
)

// testMigrationFromTrainingOperator moves a running job from Kubeflow's training-operator
// to tfk8s, as docs/kubeflow.md tells a cluster's admin to: training-operator v1.9.4,
// built from its Go module (bin/training-operator), starts a Chief, PS and Workers
// kubeflow.org/v1 TFJob while tfk8s's controller is stopped; training-operator is then
// stopped, local up starts tfk8s's controller again, which adopts the job's pods, and
// the job trains and succeeds under tfk8s with the very pods training-operator created,
// counted by UID, but for a chief and a worker deleted after the hand-over, which tfk8s
// creates again with training-operator's host names.
func testMigrationFromTrainingOperator(ctx context.Context, t *testing.T, opts localcluster.Options, st *localcluster.Status) {
	start := time.Now()
	binDir := opts.BinDir
	operator := filepath.Join(binDir, "training-operator")
	if !fileExists(operator) {
		t.Fatalf("no %s: run make tools", operator)
	}
	cs := clientset(t, st.Kubeconfig)
	cl := kubeflowClient(t, st.Kubeconfig)
	stopController(t, st)

	stopOperator := startTrainingOperator(ctx, t, cl, operator, st.Kubeconfig)
	createMigrateJob(ctx, t, cs, cl)
	waitMigrateJob(ctx, t, cl, cs, "training-operator runs it", func(job *kubeflowv1.TFJob, pods []corev1.Pod) bool {
		return hasCondition(job, "Running") && len(pods) == migratePods && allPods(pods, func(p corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && p.Labels[tfv1.LabelJobName] == ""
		})
	})
	stopOperator()
	before := podUIDs(ctx, t, cs)
	t.Logf("training-operator ran %s's pods %v; stopped after %v", migrateJob, before, time.Since(start).Round(time.Second))

	if _, err := localcluster.Up(ctx, opts); err != nil {
		t.Fatalf("local up after training-operator stopped: %v", err)
	}
	waitMigrateJob(ctx, t, cl, cs, "tfk8s adopts every pod", func(_ *kubeflowv1.TFJob, pods []corev1.Pod) bool {
		return len(pods) == migratePods && allPods(pods, func(p corev1.Pod) bool { return p.Labels[tfv1.LabelJobName] == migrateJob })
	})
	lost := []string{migrateJob + "-chief-0", migrateJob + "-worker-1"}
	replaceAdoptedPods(ctx, t, cl, cs, before, lost...)
	if out, err := execIn(ctx, st.Kubeconfig, cs, "default", migrateJob+"-chief-0", "touch", migrateGate); err != nil {
		t.Fatalf("opening the chief's gate: %v (%s)", err, out)
	}
	waitMigrateJob(ctx, t, cl, cs, "the job succeeds under tfk8s", func(job *kubeflowv1.TFJob, _ []corev1.Pod) bool {
		if hasCondition(job, "Failed") {
			t.Fatalf("%s failed under tfk8s: %+v", migrateJob, job.Status.Conditions)
		}
		return hasCondition(job, "Succeeded")
	})
	after := podUIDs(ctx, t, cs)
	for _, name := range lost {
		delete(before, name)
		delete(after, name)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("pods of %s by UID, before the hand-over and after success (-before +after); want none re-created but %v:\n%s", migrateJob, lost, diff)
	}
	checkOperatorServicesKept(ctx, t, cs)
	deleteMigrateJob(ctx, t, cl, cs)
	t.Logf("migration from training-operator took %v", time.Since(start).Round(time.Second))
}

// replaceAdoptedPods deletes adopted pods, as a lost node would, and waits until tfk8s
// has created them again and they run. The job was annotated to keep training-operator's
// names when its pods were adopted: the new chief then reaches the adopted PS and worker,
// which have no name under tfk8s's headless Service, through training-operator's
// Services, and the new worker answers to the name the others know it by. A grace
// period of 1 s: the chief's shell, PID 1, ignores SIGTERM.
func replaceAdoptedPods(ctx context.Context, t *testing.T, cl client.Client, cs kubernetes.Interface, before map[string]string, names ...string) {
	t.Helper()
	job := &kubeflowv1.TFJob{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: migrateJob}, job); err != nil {
		t.Fatal(err)
	}
	if v := job.Annotations[kubeflowv1.AnnotationTrainingOperatorServices]; v != "true" {
		t.Errorf("annotation %s of the adopted job is %q, want \"true\"", kubeflowv1.AnnotationTrainingOperatorServices, v)
	}
	for _, name := range names {
		if err := cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}); err != nil {
			t.Fatalf("deleting the adopted pod %s: %v", name, err)
		}
	}
	waitMigrateJob(ctx, t, cl, cs, fmt.Sprintf("tfk8s re-creates %v", names), func(_ *kubeflowv1.TFJob, pods []corev1.Pod) bool {
		return len(pods) == migratePods && allPods(pods, func(p corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil &&
				(!slices.Contains(names, p.Name) || string(p.UID) != before[p.Name])
		})
	})
}

// stopController stops local mode's tfk8s-controller, so that training-operator alone
// reconciles kubeflow.org jobs, as on a cluster that has not installed tfk8s yet; local
// up starts it again.
func stopController(t *testing.T, st *localcluster.Status) {
	t.Helper()
	pid := pidsOf(st)["tfk8s-controller"]
	if pid == 0 {
		t.Fatal("no tfk8s-controller runs on the local cluster")
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stopping tfk8s-controller: %v", err)
	}
	waitGone(t, pid)
}

// createMigrateJob creates the job, as a training-operator user writes it: the PS and
// workers start their TensorFlow servers at once; the chief waits for migrateGate
// before it drives them, so that the job cannot finish under training-operator.
// cleanPodPolicy None keeps every pod after success, to be counted then.
func createMigrateJob(ctx context.Context, t *testing.T, cs kubernetes.Interface, cl client.Client) {
	t.Helper()
	program, err := os.ReadFile(filepath.Join("..", "..", "examples", "tensorflow", "ps_strategy.py"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: migrateJob + "-program"}, Data: map[string]string{"ps_strategy.py": string(program)}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	none := kubeflowv1.CleanPodPolicy("None")
	server := []string{"python3", "/program/ps_strategy.py"}
	job := &kubeflowv1.TFJob{
		ObjectMeta: metav1.ObjectMeta{Name: migrateJob, Namespace: "default"},
		Spec: kubeflowv1.TFJobSpec{
			RunPolicy: kubeflowv1.RunPolicy{CleanPodPolicy: &none},
			TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
				"Chief": migrateReplica(1, "sh", "-c", "until [ -e "+migrateGate+" ]; do sleep 1; done; "+
					"exec python3 /program/ps_strategy.py --epochs 1 --steps-per-epoch 10 --model-dir /model"),
				"PS":     migrateReplica(1, server...),
				"Worker": migrateReplica(2, server...),
			},
		},
	}
	if err := cl.Create(ctx, job); err != nil {
		t.Fatalf("creating %s: %v", migrateJob, err)
	}
}

// migrateReplica is a replica spec of the job running command in the TensorFlow image,
// with the program from its ConfigMap.
func migrateReplica(n int32, command ...string) *kubeflowv1.ReplicaSpec {
	mount := func(name string) corev1.VolumeMount { return corev1.VolumeMount{Name: name, MountPath: "/" + name} }
	empty := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	return &kubeflowv1.ReplicaSpec{
		Replicas:      &n,
		RestartPolicy: "OnFailure",
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: kubeflowv1.DefaultContainerName, Image: images.TensorFlow, Command: command,
				VolumeMounts: []corev1.VolumeMount{mount("program"), mount("model"), mount("gate")},
			}},
			Volumes: []corev1.Volume{
				{Name: "program", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: migrateJob + "-program"}}}},
				{Name: "model", VolumeSource: empty},
				{Name: "gate", VolumeSource: empty},
			},
		}},
	}
}
