// Package kueue tests that Kueue, built from its module and run as a process against a
// real control plane, admits, queues and preempts TFJobs: the tfk8s controller creates
// each queued tfk8s.io job's Workload, Kueue's own integration that of each queued
// kubeflow.org job, and a job runs only while Kueue admits it. There is no kubelet: a
// test plays it, marking pods Running or Succeeded.
package kueue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
	"github.com/tfk8s/tfk8s/internal/testing/kueueproc"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

var (
	k8sClient client.Client
	kubelet   testutil.Kubelet
	kueue     *kueueproc.Process
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run makes Kueue's certificates, then runs the suite on a control plane with tfk8s's
// CRDs (kubeflow.org's too) and the tfk8s controller running, and Kueue installed
// after the controller started (its CRDs, Kueue itself, then its webhooks once it
// serves them), as on a cluster that gains Kueue: every test shows that the running
// controller follows Kueue's admissions without a restart.
func run(m *testing.M) int {
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "tfk8s-kueue-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	certs, err := kueueproc.NewCerts()
	var crds []*apiextensionsv1.CustomResourceDefinition
	if err == nil {
		crds, err = kueueproc.CRDs(binDir, certs.CA())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "preparing Kueue: %v\n", err)
		return 1
	}
	tfk8sCRDs := filepath.Join("..", "..", "..", "config", "crd", "bases")
	return testutil.RunSuite(m, controlplane.Options{CRDDir: tfk8sCRDs}, func(s *testutil.Suite) (func() error, error) {
		k8sClient = s.Client
		kubelet = testutil.Kubelet{Client: k8sClient}
		if err := s.ControlPlane.InstallKubeflowCRD(context.Background()); err != nil {
			return nil, err
		}
		stopController, err := startController(s)
		if err != nil {
			return nil, err
		}
		if err := s.ControlPlane.InstallCRDs(context.Background(), crds...); err != nil {
			stopController()
			return nil, fmt.Errorf("installing Kueue's CRDs: %w", err)
		}
		kueue, err = kueueproc.Start(context.Background(), k8sClient, kueueproc.Options{
			BinDir: binDir, Dir: dir, Kubeconfig: s.ControlPlane.Kubeconfig(),
			Frameworks: []string{"batch/job", "kubeflow.org/tfjob"}, ExternalFrameworks: []string{"TFJob.v1alpha1.tfk8s.io"},
		}, certs)
		if err != nil {
			stopController()
			return nil, err
		}
		if err := kueue.ServeWebhooks(context.Background(), k8sClient, certs.CA(), "kubeflow.org", "kueue.x-k8s.io"); err != nil {
			stopController()
			kueue.Stop()
			return nil, err
		}
		return func() error {
			stopController()
			kueue.Stop()
			return nil
		}, nil
	})
}

// startController runs the tfk8s controller in this process, with --kubeflow, until
// the returned function is called.
func startController(s *testutil.Suite) (stop func(), err error) {
	mgr, err := controller.NewManager(s.ControlPlane.Config, controller.ManagerOptions{
		Options:            controller.Options{Kubeflow: true},
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", SkipNameValidation: true,
	})
	if err != nil {
		return nil, err
	}
	stopManager := testutil.StartManager(mgr)
	return func() {
		if err := stopManager(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}, nil
}

// printKueueLogOnFailure prints the end of Kueue's log if t fails.
func printKueueLogOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Kueue's log (%s), last 150 lines:\n%s", kueue.LogPath, kueue.LogTail(150))
		}
	})
}

// createKueueObjects creates Kueue objects from YAML documents, deleted after the test.
func createKueueObjects(t *testing.T, docs ...string) {
	t.Helper()
	created, err := kueueproc.CreateObjects(context.Background(), k8sClient, docs...)
	for _, obj := range created {
		t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
	}
	if err != nil {
		t.Fatal(err)
	}
}

// setupQueue creates a ResourceFlavor that places pods on nodes labelled
// tfk8s.io/test-flavor=<ns>, a ClusterQueue with cpuQuota CPUs of it (preempting
// lower priorities within the queue), and LocalQueue "q" in ns feeding it.
func setupQueue(t *testing.T, ns string, cpuQuota int) {
	t.Helper()
	createKueueObjects(t,
		fmt.Sprintf(`{apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: %s},
  spec: {nodeLabels: {tfk8s.io/test-flavor: %s}}}`, ns, ns),
		fmt.Sprintf(`{apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: %s},
  spec: {namespaceSelector: {}, preemption: {withinClusterQueue: LowerPriority},
    resourceGroups: [{coveredResources: [cpu], flavors: [{name: %s, resources: [{name: cpu, nominalQuota: %d}]}]}]}}`, ns, ns, cpuQuota),
		fmt.Sprintf(`{apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {name: q, namespace: %s},
  spec: {clusterQueue: %s}}`, ns, ns),
	)
	testutil.Eventually(t, "ClusterQueue "+ns+" to be active", func(ctx context.Context) (bool, error) {
		cq := &unstructured.Unstructured{}
		cq.SetAPIVersion("kueue.x-k8s.io/v1beta2")
		cq.SetKind("ClusterQueue")
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: ns}, cq); err != nil {
			return false, err
		}
		return kueueproc.ConditionTrue(cq, "Active"), nil
	})
}

// queuedJob is a job of one PS and two workers, each asking for one CPU, in LocalQueue
// q, with the WorkloadPriorityClass priority ("" for none) and backoffLimit 0.
func queuedJob(ns, name, priority string) *tfv1.TFJob {
	job := testutil.MakeTFJob(name, ns).PS(1).Workers(2).BackoffLimit(0).Obj()
	job.Labels = map[string]string{tfv1.LabelKueueQueue: "q"}
	if priority != "" {
		job.Labels[tfv1.LabelKueuePriorityClass] = priority
	}
	for _, spec := range job.Spec.TFReplicaSpecs {
		spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	}
	return job
}

// getWorkload reads the Workload of a job.
func getWorkload(ctx context.Context, ns, job string) (*unstructured.Unstructured, error) {
	wl := &unstructured.Unstructured{}
	wl.SetGroupVersionKind(controller.WorkloadGVK)
	return wl, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tfjob-" + job}, wl)
}

// waitJob waits until the job, of either API, satisfies ok, and returns it.
func waitJob(t *testing.T, ns, name, what string, ok func(*tfv1.TFJob) bool) *tfv1.TFJob {
	t.Helper()
	var job *tfv1.TFJob
	testutil.Eventually(t, "TFJob "+name+" "+what, func(ctx context.Context) (bool, error) {
		var err error
		job, err = readModel(ctx, ns, name)
		return err == nil && ok(job), err
	})
	return job
}

// readModel reads the tfk8s.io job of that name or else the kubeflow.org one, as
// tfk8s's model of it.
func readModel(ctx context.Context, ns, name string) (*tfv1.TFJob, error) {
	key := client.ObjectKey{Namespace: ns, Name: name}
	job := &tfv1.TFJob{}
	err := k8sClient.Get(ctx, key, job)
	if !apierrors.IsNotFound(err) {
		return job, err
	}
	kf := &kubeflowv1.TFJob{}
	if err := k8sClient.Get(ctx, key, kf); err != nil {
		return nil, err
	}
	return kubeflow.ToModel(kf), nil
}

// held is true when the job's Suspended condition is True with reason.
func held(reason string) func(*tfv1.TFJob) bool {
	return func(job *tfv1.TFJob) bool {
		c := meta.FindStatusCondition(job.Status.Conditions, string(tfv1.JobSuspended))
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason
	}
}

// has is true when the job has condition typ True.
func has(typ tfv1.JobState) func(*tfv1.TFJob) bool {
	return func(job *tfv1.TFJob) bool {
		return meta.IsStatusConditionTrue(job.Status.Conditions, string(typ))
	}
}

// jobPods lists the job's pods that are not being deleted.
func jobPods(ctx context.Context, ns, job string) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{tfv1.LabelJobName: job}); err != nil {
		return nil, err
	}
	var live []corev1.Pod
	for _, pod := range list.Items {
		if pod.DeletionTimestamp == nil {
			live = append(live, pod)
		}
	}
	return live, nil
}

// runJob waits for the job's three pods, marks them Running and waits until the job
// is; it returns the pods.
func runJob(t *testing.T, ns, name string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	testutil.Eventually(t, "the 3 pods of "+name, func(ctx context.Context) (bool, error) {
		var err error
		pods, err = jobPods(ctx, ns, name)
		return len(pods) == 3, err
	})
	for _, pod := range pods {
		kubelet.SetRunning(t, ns, pod.Name)
	}
	waitJob(t, ns, name, "to be Running", has(tfv1.JobRunning))
	return pods
}

// finishJob makes the job's workers exit 0 and waits until the job has succeeded.
func finishJob(t *testing.T, ns, name string) *tfv1.TFJob {
	t.Helper()
	pods, err := jobPods(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods {
		if strings.Contains(pod.Name, "-worker-") {
			kubelet.SetExited(t, ns, pod.Name, 0)
		}
	}
	return waitJob(t, ns, name, "to succeed", has(tfv1.JobSucceeded))
}

// since formats the time elapsed since start, for the figures the tests print.
func since(start time.Time) string { return time.Since(start).Round(time.Millisecond).String() }
