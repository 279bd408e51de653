package controller

import (
	"context"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestDeviceClaimTemplatesPassTheSchema: the ResourceClaimTemplates tfk8s writes, from
// the smallest deviceClaim to the largest the TFJob schema admits, are accepted by the
// API server's resource.k8s.io/v1 validation (server-side dry-run, nothing stored).
func TestDeviceClaimTemplatesPassTheSchema(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	many := make([]string, 32)
	for i := range many {
		many[i] = `device.driver == "gpu.example.com"`
	}
	cases := []struct {
		name  string
		claim tfv1.DeviceClaim
	}{
		{"class only", tfv1.DeviceClaim{DeviceClassName: "gpu.example.com"}},
		{"attribute and capacity selectors", tfv1.DeviceClaim{DeviceClassName: "gpu.nvidia.com", Count: ptr.To[int64](2), Selectors: []string{
			`device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-80GB"`,
			`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`,
		}}},
		{"the schema's maxima", tfv1.DeviceClaim{DeviceClassName: "gpu.example.com", Count: ptr.To[int64](32), Selectors: many}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("schema", ns).UID("uid-1").Workers(2).Obj()
			tmpl := build.DeviceClaimTemplate(job, tfv1.ReplicaTypeWorker, &tc.claim)
			if err := k8sClient.Create(context.Background(), tmpl, client.DryRunAll); err != nil {
				t.Errorf("API server refused the template: %v", err)
			}
		})
	}
}

// TestDeviceClaimGivesEachReplicaItsOwnClaim: a job whose workers ask for a device gets
// one ResourceClaimTemplate, owned by the job; each worker's pod refers to it from its
// TensorFlow container, and Kubernetes makes each pod a claim of its own from it. The
// chief, which asks for none, gets no claim. Deleting the job deletes the template.
func TestDeviceClaimGivesEachReplicaItsOwnClaim(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	deviceClass(t, "gpu.example.com")
	job := testutil.MakeTFJob("dra", ns).Chief().Workers(2).Obj()
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].DeviceClaim = &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com"}
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, job.Name, "dra-chief-0", "dra-worker-0", "dra-worker-1")
	tmpl := &resourcev1.ResourceClaimTemplate{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dra-worker-devices"}, tmpl); err != nil {
		t.Fatalf("ResourceClaimTemplate dra-worker-devices: %v", err)
	}
	if owner := metav1.GetControllerOf(tmpl); owner == nil || owner.UID != job.UID {
		t.Errorf("template's controller %v, want TFJob dra (uid %s)", owner, job.UID)
	}
	for name, pod := range pods {
		want := 0
		if strings.Contains(name, "worker") {
			want = 1
		}
		if got := len(pod.Spec.ResourceClaims); got != want {
			t.Errorf("pod %s has %d resourceClaims %v, want %d", name, got, pod.Spec.ResourceClaims, want)
		}
	}
	claimOwners := map[string]string{}
	testutil.Eventually(t, "a ResourceClaim for each worker", func(ctx context.Context) (bool, error) {
		list := &resourcev1.ResourceClaimList{}
		if err := k8sClient.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, c := range list.Items {
			if owner := metav1.GetControllerOf(&c); owner != nil {
				claimOwners[owner.Name] = c.Name
			}
		}
		return len(list.Items) == 2, nil
	})
	if claimOwners["dra-worker-0"] == "" || claimOwners["dra-worker-1"] == "" {
		t.Errorf("claims by owning pod %v, want one for each of dra-worker-0 and dra-worker-1", claimOwners)
	}
	if err := k8sClient.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the template garbage-collected", func(ctx context.Context) (bool, error) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dra-worker-devices"}, &resourcev1.ResourceClaimTemplate{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// TestBadDeviceSelectorFailsTheJob: a selector that does not compile is refused by the
// API server when tfk8s creates the template; the job fails with InvalidDeviceClaim
// naming the selector's field in the job, and no pod is created.
func TestBadDeviceSelectorFailsTheJob(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	deviceClass(t, "gpu.example.com")
	job := testutil.MakeTFJob("badcel", ns).Workers(1).Obj()
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].DeviceClaim = &tfv1.DeviceClaim{
		DeviceClassName: "gpu.example.com",
		Selectors:       []string{`device.driver == "gpu.example.com"`, `device.attributes["gpu.example.com"].model ==`},
	}
	wantDeviceClaimFailure(t, job, "spec.tfReplicaSpecs[Worker].deviceClaim.selectors[1]: ")
}

// TestDeviceClaimTemplateOfAnotherIsNotUsed: a template that already holds the name of
// the job's and is not the job's fails the job, rather than handing its replicas
// devices another asked for.
func TestDeviceClaimTemplateOfAnotherIsNotUsed(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	deviceClass(t, "gpu.example.com")
	job := testutil.MakeTFJob("taken", ns).Workers(1).Obj()
	dc := &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com"}
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].DeviceClaim = dc
	foreign := build.DeviceClaimTemplate(job, tfv1.ReplicaTypeWorker, dc)
	foreign.OwnerReferences = nil
	if err := k8sClient.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	wantDeviceClaimFailure(t, job, "spec.tfReplicaSpecs[Worker].deviceClaim: ResourceClaimTemplate taken-worker-devices already exists and is owned by nothing")
}

// deviceClass makes sure the cluster-wide DeviceClass of the name exists: tfk8s fails a
// job whose class does not.
func deviceClass(t *testing.T, name string) {
	t.Helper()
	err := k8sClient.Create(context.Background(), &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestMissingDeviceClassFailsTheJob: a deviceClaim naming a DeviceClass that does not
// exist fails the job with InvalidDeviceClaim naming the field, rather than leaving its
// pods Pending with no reason.
func TestMissingDeviceClassFailsTheJob(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("noclass", ns).Workers(1).Obj()
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].DeviceClaim = &tfv1.DeviceClaim{DeviceClassName: "nosuch.example.com"}
	wantDeviceClaimFailure(t, job, `spec.tfReplicaSpecs[Worker].deviceClaim.deviceClassName: DeviceClass "nosuch.example.com" does not exist`)
}

// TestDeviceClaimTemplateLeftByDeletedJobIsWaitedFor: a job submitted again under the
// name of one just deleted finds the old job's template not yet collected; it waits
// for garbage collection and then starts with a template of its own, rather than
// failing. A finalizer holds the old template until the controller has met it.
func TestDeviceClaimTemplateLeftByDeletedJobIsWaitedFor(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	deviceClass(t, "gpu.example.com")
	dc := &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com"}
	old := testutil.MakeTFJob("again", ns).UID("uid-deleted").Workers(1).Obj()
	left := build.DeviceClaimTemplate(old, tfv1.ReplicaTypeWorker, dc)
	left.Finalizers = []string{"test.tfk8s.io/hold"}
	if err := k8sClient.Create(ctx, left); err != nil {
		t.Fatal(err)
	}
	job := testutil.MakeTFJob("again", ns).Workers(1).Obj()
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].DeviceClaim = dc
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	// The controller has read the job when it has given it a status; only then does
	// the old template go, so the job meets it.
	testutil.Eventually(t, "the job observed", func(ctx context.Context) (bool, error) {
		got := &tfv1.TFJob{}
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), got)
		return err == nil && len(got.Status.Conditions) > 0, err
	})
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := k8sClient.Patch(ctx, left, patch); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, job.Name, "again-worker-0")
	tmpl := &resourcev1.ResourceClaimTemplate{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "again-worker-devices"}, tmpl); err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(tmpl); owner == nil || owner.UID != job.UID {
		t.Errorf("template's controller %v, want TFJob again (uid %s)", owner, job.UID)
	}
	got := &tfv1.TFJob{}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), got); err != nil {
		t.Fatal(err)
	}
	if c := conditionOf(got, tfv1.JobFailed); c.Status == "True" {
		t.Errorf("job failed: %s: %s", c.Reason, c.Message)
	}
}

// TestQueuedDeviceClaimFailsTheJob: a job in a Kueue queue that asks for devices by
// deviceClaim fails with InvalidDeviceClaim naming the field: its Workload would not
// carry the devices, and Kueue would admit it without counting them.
func TestQueuedDeviceClaimFailsTheJob(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("queued", ns).Workers(1).Obj()
	job.Labels = map[string]string{tfv1.LabelKueueQueue: "team-a"}
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].DeviceClaim = &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com"}
	wantDeviceClaimFailure(t, job, "spec.tfReplicaSpecs[Worker].deviceClaim: the job waits in Kueue queue team-a (label kueue.x-k8s.io/queue-name)")
}

// wantDeviceClaimFailure creates the job and waits for it to fail with reason
// InvalidDeviceClaim, its message starting with want, having made no pod.
func wantDeviceClaimFailure(t *testing.T, job *tfv1.TFJob, want string) {
	t.Helper()
	ctx := context.Background()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	c := conditionOf(waitCondition(t, job.Namespace, job.Name, tfv1.JobFailed), tfv1.JobFailed)
	t.Logf("%s: %s", c.Reason, c.Message)
	if c.Reason != tfv1.ReasonInvalidDeviceClaim || !strings.HasPrefix(c.Message, want) {
		t.Errorf("Failed condition %s: %q; want %s starting %q", c.Reason, c.Message, tfv1.ReasonInvalidDeviceClaim, want)
	}
	if pods, err := jobPods(ctx, job.Namespace, job.Name); err != nil || len(pods) != 0 {
		t.Errorf("pods %v (%v), want none", pods, err)
	}
}
