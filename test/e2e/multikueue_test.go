package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/kueueproc"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// MultiKueue's test runs a kubeflow.org TFJob submitted on a manager cluster on a
// worker cluster: the manager is a control plane without nodes, with tfk8s (--kubeflow)
// and Kueue configured for MultiKueue; the worker is the local cluster of
// TestKubeflowSDK, with its tfk8s and a Kueue of its own.
const (
	multiKueueNamespace = "kf-multikueue"
	// multiKueueWait bounds the wait for the job: the pod's start (the TensorFlow image
	// is pulled from the local registry in 30 s, unless the SDK's jobs pulled it), its
	// run and the status' way back.
	multiKueueWait = 3 * time.Minute
)

// testMultiKueue submits a kubeflow.org TFJob on a manager and checks that Kueue's
// webhook there hands it to MultiKueue (managedBy kueue.x-k8s.io/multikueue), that
// tfk8s on the manager leaves it alone (no pod), that it runs on the worker's node,
// and that its Succeeded status is mirrored on the manager.
func testMultiKueue(ctx context.Context, t *testing.T, binDir, workerKubeconfig string) {
	start := time.Now()
	worker := newKueueCluster(ctx, t, binDir, "worker", workerKubeconfig)
	manager := startManagerCluster(ctx, t, binDir)
	worker.createQueues(ctx, t, "")
	manager.connectWorker(ctx, t, workerKubeconfig)
	manager.createQueues(ctx, t, "mk")
	t.Logf("manager and worker ready for MultiKueue in %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	job := multiKueueJob()
	if err := manager.c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(job.Spec.RunPolicy.ManagedBy, ""); got != kubeflowv1.ManagedByMultiKueue {
		t.Errorf("job as created on the manager: runPolicy.managedBy = %q, want %q, set by Kueue's webhook", got, kubeflowv1.ManagedByMultiKueue)
	}
	var workerPod *corev1.Pod
	got := job
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, multiKueueWait, true, func(ctx context.Context) (bool, error) {
		if p := jobPodOn(ctx, worker.c, job.Name); p != nil && p.Spec.NodeName != "" {
			workerPod = p
		}
		read := &kubeflowv1.TFJob{}
		if err := manager.c.Get(ctx, client.ObjectKeyFromObject(job), read); err != nil {
			return false, err
		}
		got = read
		return kubeflowCondition(got, "Succeeded") || kubeflowCondition(got, "Failed"), nil
	})
	if err == nil && !kubeflowCondition(got, "Succeeded") {
		err = fmt.Errorf("the job failed")
	}
	if err != nil {
		t.Fatalf("waiting for the job to succeed, as seen on the manager: %v; its status there: %+v\nmanager's Kueue:\n%s\nworker's Kueue:\n%s",
			err, got.Status, manager.kueue.LogTail(60), worker.kueue.LogTail(60))
	}
	t.Logf("Succeeded on the manager %v after it was submitted there", time.Since(start).Round(time.Millisecond))
	if workerPod == nil {
		t.Errorf("no pod of %s was seen bound to a node of the worker", job.Name)
	} else {
		t.Logf("its pod %s ran on the worker's node %s", workerPod.Name, workerPod.Spec.NodeName)
	}
	if rs := got.Status.ReplicaStatuses[kubeflowv1.ReplicaType("Worker")]; rs == nil || rs.Succeeded != 1 {
		t.Errorf("replicaStatuses of Worker on the manager = %+v, want succeeded 1, mirrored from the worker", rs)
	}
	if p := jobPodOn(ctx, manager.c, job.Name); p != nil {
		t.Errorf("tfk8s on the manager created pod %s for a job MultiKueue manages", p.Name)
	}
}

// multiKueueJob is the job: one worker, which prints its host name, in LocalQueue q.
func multiKueueJob() *kubeflowv1.TFJob {
	program := `import socket; print("trained on", socket.gethostname())`
	return &kubeflowv1.TFJob{
		ObjectMeta: metav1.ObjectMeta{Name: "mk-job", Namespace: multiKueueNamespace, Labels: map[string]string{tfv1.LabelKueueQueue: "q"}},
		Spec: kubeflowv1.TFJobSpec{TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			"Worker": {Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "tensorflow", Image: images.TensorFlow, Command: []string{"python3", "-c", program},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
				}},
			}}},
		}},
	}
}

// jobPodOn is a pod of the kubeflow.org job on the cluster c reaches, nil if none.
func jobPodOn(ctx context.Context, c client.Client, job string) *corev1.Pod {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(multiKueueNamespace), client.MatchingLabels{"training.kubeflow.org/job-name": job}); err != nil || len(pods.Items) == 0 {
		return nil
	}
	return &pods.Items[0]
}

// kubeflowCondition reports whether the job's condition typ is True.
func kubeflowCondition(job *kubeflowv1.TFJob, typ kubeflowv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// kueueCluster is a cluster with Kueue running against it.
type kueueCluster struct {
	name  string
	c     client.Client
	kueue *kueueproc.Process
}

// newKueueCluster installs Kueue's CRDs on the cluster of kubeconfig and runs Kueue
// against it, with its kubeflow.org/tfjob integration and its webhooks.
func newKueueCluster(ctx context.Context, t *testing.T, binDir, name, kubeconfig string) *kueueCluster {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc := &kueueCluster{name: name}
	if kc.c, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		t.Fatal(err)
	}
	certs, err := kueueproc.NewCerts()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := kueueproc.CRDs(binDir, certs.CA())
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.InstallCRDsAt(ctx, cfg, crds...); err != nil {
		t.Fatalf("%s: installing Kueue's CRDs: %v", name, err)
	}
	dir := t.TempDir()
	kc.kueue, err = kueueproc.Start(ctx, kc.c, kueueproc.Options{
		BinDir: binDir, Dir: dir, Kubeconfig: kubeconfig, Frameworks: []string{"kubeflow.org/tfjob"},
	}, certs)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		kc.kueue.Stop()
		if t.Failed() {
			t.Logf("%s's Kueue log, last 100 lines:\n%s", name, kc.kueue.LogTail(100))
		}
	})
	if err := kc.kueue.ServeWebhooks(ctx, kc.c, certs.CA(), "kubeflow.org", "kueue.x-k8s.io"); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := kc.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: multiKueueNamespace}}); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return kc
}

// startManagerCluster starts the manager: a control plane serving tfk8s's CRDs and
// kubeflow.org's, tfk8s's controller with --kubeflow, and Kueue.
func startManagerCluster(ctx context.Context, t *testing.T, binDir string) *kueueCluster {
	t.Helper()
	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: binDir})
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	t.Cleanup(cp.Stop)
	if err := cp.InstallKubeflowCRD(ctx); err != nil {
		t.Fatalf("manager: %v", err)
	}
	mgr, err := controller.NewManager(cp.Config, controller.ManagerOptions{
		Options:            controller.Options{Kubeflow: true},
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", SkipNameValidation: true,
	})
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	stop := testutil.StartManager(mgr)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("manager's tfk8s: %v", err)
		}
	})
	return newKueueCluster(ctx, t, binDir, "manager", cp.Kubeconfig())
}

// connectWorker gives the manager's Kueue the worker's kubeconfig, its files inlined as
// MultiKueue requires, and makes the MultiKueue admission check mk of that one worker.
func (kc *kueueCluster) connectWorker(ctx context.Context, t *testing.T, workerKubeconfig string) {
	t.Helper()
	raw, err := clientcmd.LoadFromFile(workerKubeconfig)
	if err == nil {
		err = clientcmdapi.FlattenConfig(raw)
	}
	var data []byte
	if err == nil {
		data, err = clientcmd.Write(*raw)
	}
	if err != nil {
		t.Fatalf("the worker's kubeconfig: %v", err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: kueueproc.Namespace, Name: "worker-kubeconfig"}, Data: map[string][]byte{"kubeconfig": data}}
	if err := kc.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	kc.create(ctx, t,
		`{apiVersion: kueue.x-k8s.io/v1beta2, kind: MultiKueueCluster, metadata: {name: worker},
  spec: {clusterSource: {kubeConfig: {locationType: Secret, location: worker-kubeconfig}}}}`,
		`{apiVersion: kueue.x-k8s.io/v1beta2, kind: MultiKueueConfig, metadata: {name: mk}, spec: {clusters: [worker]}}`,
		`{apiVersion: kueue.x-k8s.io/v1beta2, kind: AdmissionCheck, metadata: {name: mk},
  spec: {controllerName: kueue.x-k8s.io/multikueue, parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: mk}}}`,
	)
	kc.waitActive(ctx, t, "MultiKueueCluster", "", "worker")
	kc.waitActive(ctx, t, "AdmissionCheck", "", "mk")
}

// createQueues makes ResourceFlavor f, ClusterQueue cq of 2 CPUs of it (with the
// admission check, if one is named) and LocalQueue q feeding it in the test's
// namespace, and waits until the queues are active.
func (kc *kueueCluster) createQueues(ctx context.Context, t *testing.T, admissionCheck string) {
	t.Helper()
	checks := ""
	if admissionCheck != "" {
		checks = fmt.Sprintf(", admissionChecksStrategy: {admissionChecks: [{name: %s}]}", admissionCheck)
	}
	kc.create(ctx, t,
		`{apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: f}}`,
		`{apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: cq},
  spec: {namespaceSelector: {}, resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: 2}]}]}]`+checks+`}}`,
		`{apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {name: q, namespace: `+multiKueueNamespace+`}, spec: {clusterQueue: cq}}`,
	)
	kc.waitActive(ctx, t, "ClusterQueue", "", "cq")
	kc.waitActive(ctx, t, "LocalQueue", multiKueueNamespace, "q")
}

// create creates Kueue objects on the cluster.
func (kc *kueueCluster) create(ctx context.Context, t *testing.T, docs ...string) {
	t.Helper()
	if _, err := kueueproc.CreateObjects(ctx, kc.c, docs...); err != nil {
		t.Fatalf("%s: %v", kc.name, err)
	}
}

// waitActive waits until the Kueue object's Active condition is True.
func (kc *kueueCluster) waitActive(ctx context.Context, t *testing.T, kind, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: kind})
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := kc.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return false, err
		}
		return kueueproc.ConditionTrue(u, "Active"), nil
	})
	if err != nil {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		t.Fatalf("%s: waiting for %s %s to be active: %v; conditions %v", kc.name, kind, name, err, conds)
	}
}
