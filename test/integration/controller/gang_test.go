package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	pluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// Volcano's API module ships no CRD manifests: they are generated from its types.
//go:generate ../../../bin/controller-gen crd paths=volcano.sh/apis/pkg/apis/scheduling/v1beta1 output:crd:dir=testdata/volcano

// installGangCRDs installs the PodGroup CRDs of Volcano (generated from its module's
// types) and scheduler-plugins (as its module ships them), so that the API server
// validates the controller's group objects against their schemas.
func installGangCRDs(t *testing.T, c client.Client) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/scheduler-plugins").Output()
	if err != nil {
		t.Fatalf("locating the scheduler-plugins module: %v", err)
	}
	dirs := []string{"testdata/volcano", filepath.Join(strings.TrimSpace(string(out)), "config/crd/bases")}
	for _, dir := range dirs {
		crds, err := controlplane.ReadCRDs(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, crd := range crds {
			if err := c.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("creating CRD %s: %v", crd.Name, err)
			}
		}
	}
	gangClient := newGangClient(t, cp.Config)
	for _, list := range []client.ObjectList{&volcanov1beta1.PodGroupList{}, &pluginsv1alpha1.PodGroupList{}} {
		testutil.Eventually(t, fmt.Sprintf("%T served", list), func(ctx context.Context) (bool, error) {
			return gangClient.List(ctx, list) == nil, nil
		})
	}
}

// newGangClient is a client that knows the group objects of every gang scheduler.
func newGangClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	s := scheme.New()
	controller.AddGangTypes(s)
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// makeGangJob is job name with 1 PS and 2 workers asking for 1 CPU and 1Gi each, and
// the given scheduling policy.
func makeGangJob(name, ns string, sp *tfv1.SchedulingPolicy) *tfv1.TFJob {
	job := testutil.MakeTFJob(name, ns).PS(1).Workers(2).Obj()
	for _, spec := range job.Spec.TFReplicaSpecs {
		spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		}
	}
	job.Spec.RunPolicy.SchedulingPolicy = sp
	return job
}

// markUnschedulable writes the PodScheduled condition the scheduler gives a pod that
// fits no node, with its verdict.
func markUnschedulable(t *testing.T, ns, pod, verdict string) {
	t.Helper()
	kubelet.WritePodStatus(t, ns, pod, func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: verdict}}
	})
}

// gangPodNames are the pods of a job made by makeGangJob.
func gangPodNames(job string) []string {
	return []string{job + "-ps-0", job + "-worker-0", job + "-worker-1"}
}

// checkOwnedByJob fails unless obj is controlled by the job.
func checkOwnedByJob(t *testing.T, obj metav1.Object, job *tfv1.TFJob) {
	t.Helper()
	if ref := metav1.GetControllerOf(obj); ref == nil || ref.Kind != "TFJob" || ref.Name != job.Name {
		t.Errorf("%s: controller %+v, want TFJob %s", obj.GetName(), ref, job.Name)
	}
}

// TestGangGroupsOfVolcanoAndSchedulerPlugins checks that the controller creates each
// provider's PodGroup as its CRD expects (the API server validated it against the
// installed schema, and pruned nothing of it), owned by the job, before binding every
// pod to it the way that scheduler looks for its members.
func TestGangGroupsOfVolcanoAndSchedulerPlugins(t *testing.T) {
	installGangCRDs(t, k8sClient)
	gangClient := newGangClient(t, cp.Config)
	ns := testutil.Namespace(t, k8sClient)
	// The controller's default is Volcano: a job naming no provider gets Volcano's group.
	startControllerWith(t, *cp.Config, controller.Options{PodOptions: controller.PodOptions{
		Gang: controller.GangOptions{DefaultProvider: tfv1.GangProviderVolcano, SchedulerPluginsScheduler: "coscheduler"},
	}})
	ctx := context.Background()
	summed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("3Gi")}

	cases := []struct {
		name      string
		sp        *tfv1.SchedulingPolicy
		group     client.Object
		wantSpec  func(client.Object) any
		want      any
		scheduler string
		bound     func(*corev1.Pod) string
	}{{
		name:  "volcano",
		sp:    &tfv1.SchedulingPolicy{MinAvailable: ptr.To[int32](2), Queue: "research"},
		group: &volcanov1beta1.PodGroup{},
		wantSpec: func(o client.Object) any {
			return o.(*volcanov1beta1.PodGroup).Spec
		},
		want:      volcanov1beta1.PodGroupSpec{MinMember: 2, Queue: "research", MinResources: &summed},
		scheduler: "volcano",
		bound:     func(p *corev1.Pod) string { return p.Annotations["scheduling.k8s.io/group-name"] },
	}, {
		name:  "scheduler-plugins",
		sp:    &tfv1.SchedulingPolicy{Provider: tfv1.GangProviderSchedulerPlugins, ScheduleTimeoutSeconds: ptr.To[int32](600)},
		group: &pluginsv1alpha1.PodGroup{},
		wantSpec: func(o client.Object) any {
			return o.(*pluginsv1alpha1.PodGroup).Spec
		},
		want:      pluginsv1alpha1.PodGroupSpec{MinMember: 3, MinResources: summed, ScheduleTimeoutSeconds: ptr.To[int32](600)},
		scheduler: "coscheduler",
		bound:     func(p *corev1.Pod) string { return p.Labels["scheduling.x-k8s.io/pod-group"] },
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := makeGangJob(tc.name, ns, tc.sp)
			if err := k8sClient.Create(ctx, job); err != nil {
				t.Fatal(err)
			}
			pods := waitPods(t, ns, job.Name, gangPodNames(job.Name)...)
			// The group is created before the pods: it is there once they are.
			if err := gangClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, tc.group); err != nil {
				t.Fatalf("reading the job's group: %v", err)
			}
			checkOwnedByJob(t, tc.group, job)
			if diff := cmp.Diff(tc.want, tc.wantSpec(tc.group)); diff != "" {
				t.Errorf("group spec (-want +got):\n%s", diff)
			}
			for name, pod := range pods {
				if got := tc.bound(pod); got != job.Name || pod.Spec.SchedulerName != tc.scheduler {
					t.Errorf("%s: group %q, schedulerName %q; want %q, %q", name, got, pod.Spec.SchedulerName, job.Name, tc.scheduler)
				}
			}
			spec, _ := json.Marshal(tc.wantSpec(tc.group))
			t.Logf("%s PodGroup %s: %s", tc.name, job.Name, spec)
		})
	}
}

// TestGangRefusedWhenAPINotServed checks that a job whose gang scheduler's API is not
// served (this control plane serves no scheduling.k8s.io PodGroup) fails with a
// condition naming the provider and the API, and gets no pod.
func TestGangRefusedWhenAPINotServed(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := makeGangJob("native", ns, &tfv1.SchedulingPolicy{Provider: tfv1.GangProviderNative})
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	job = waitCondition(t, ns, job.Name, tfv1.JobFailed)
	c := findCondition(job, tfv1.JobFailed)
	if c.Reason != tfv1.ReasonGangSchedulerUnavailable || !strings.Contains(c.Message, `"native"`) ||
		!strings.Contains(c.Message, "PodGroup scheduling.k8s.io/v1beta1 or v1alpha2") {
		t.Errorf("Failed condition: %s: %s; want %s naming native and PodGroup scheduling.k8s.io/v1beta1 or v1alpha2",
			c.Reason, c.Message, tfv1.ReasonGangSchedulerUnavailable)
	}
	if msg := eventMessage(t, ns, job.UID, tfv1.ReasonGangSchedulerUnavailable); msg != c.Message {
		t.Errorf("event %q, want the condition's message", msg)
	}
	// The refusal is written in the reconcile that would have created the pods.
	pods, err := jobPods(ctx, ns, job.Name)
	if err != nil || len(pods) != 0 {
		t.Errorf("pods of the refused job: %d, %v; want none", len(pods), err)
	}
	t.Logf("%s: %s", c.Reason, c.Message)
}

// findCondition returns the job's condition of type typ, or an empty one.
func findCondition(job *tfv1.TFJob, typ tfv1.JobState) metav1.Condition {
	for _, c := range job.Status.Conditions {
		if c.Type == string(typ) {
			return c
		}
	}
	return metav1.Condition{}
}

// TestGangScheduleTimeout checks that a job whose pods are not all bound to a node
// within scheduleTimeoutSeconds fails, with a message naming each unbound pod and what
// the scheduler said of it. No scheduler runs here: the test writes the scheduler's
// verdict on one pod, and no pod is ever bound.
func TestGangScheduleTimeout(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := makeGangJob("stuck", ns, &tfv1.SchedulingPolicy{ScheduleTimeoutSeconds: ptr.To[int32](3)})
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, job.Name, gangPodNames(job.Name)...)
	const verdict = "0/1 nodes are available: 1 Insufficient cpu."
	markUnschedulable(t, ns, "stuck-worker-1", verdict)
	job = waitCondition(t, ns, job.Name, tfv1.JobFailed)
	c := findCondition(job, tfv1.JobFailed)
	want := "3 of the job's pods were not scheduled within scheduleTimeoutSeconds (3s): " +
		"stuck-ps-0 (no scheduler has reported on it); stuck-worker-0 (no scheduler has reported on it); " +
		"stuck-worker-1 (" + verdict + ")"
	if c.Reason != tfv1.ReasonGangScheduleTimeout || c.Message != want {
		t.Errorf("Failed condition:\n%s: %s\nwant\n%s: %s", c.Reason, c.Message, tfv1.ReasonGangScheduleTimeout, want)
	}
	if msg := eventMessage(t, ns, job.UID, tfv1.ReasonGangScheduleTimeout); msg != want {
		t.Errorf("event %q, want %q", msg, want)
	}
	t.Logf("%s: %s", c.Reason, c.Message)
}

// TestGangNative checks Kubernetes' own gang scheduling on a control plane that serves
// it (scheduling.k8s.io/v1beta1 from Kubernetes 1.37, v1alpha2 in 1.36): the job's
// PodGroup, in the newest version served, asks for every replica, and each pod names it in
// spec.schedulingGroup, as the API server keeps it.
func TestGangNative(t *testing.T) {
	ctx := context.Background()
	native, err := controlplane.Start(ctx, controlplane.Options{GangScheduling: true})
	if errors.Is(err, controlplane.ErrNoGangScheduling) {
		t.Skipf("skipped: %v", err)
	}
	if err != nil {
		t.Fatalf("starting a control plane with gang scheduling: %v", err)
	}
	t.Cleanup(native.Stop)
	c := newGangClient(t, native.Config)
	ns := testutil.Namespace(t, c)
	startControllerWith(t, *native.Config, controller.Options{PodOptions: controller.PodOptions{
		Gang: controller.GangOptions{DefaultProvider: tfv1.GangProviderNative},
	}})
	job := makeGangJob("native", ns, nil)
	if err := c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	testutil.Eventually(t, "the job's 3 pods", func(ctx context.Context) (bool, error) {
		err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{tfv1.LabelJobName: job.Name})
		return err == nil && len(pods.Items) == 3, err
	})
	version := newestPodGroupVersion(t, native.Config)
	group := &unstructured.Unstructured{}
	group.SetGroupVersionKind(schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: version, Kind: "PodGroup"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, group); err != nil {
		t.Fatalf("reading the job's PodGroup %s: %v", version, err)
	}
	checkOwnedByJob(t, group, job)
	minCount, _, _ := unstructured.NestedInt64(group.Object, "spec", "schedulingPolicy", "gang", "minCount")
	if minCount != 3 {
		t.Errorf("PodGroup %s spec %v, want schedulingPolicy.gang.minCount 3", version, group.Object["spec"])
	}
	if f := managedBy(group); !strings.Contains(f, "apiVersion=scheduling.k8s.io/"+version) {
		t.Errorf("PodGroup written as %s, want scheduling.k8s.io/%s, the newest served", f, version)
	}
	for _, p := range pods.Items {
		if g := p.Spec.SchedulingGroup; g == nil || ptr.Deref(g.PodGroupName, "") != job.Name {
			t.Errorf("%s: schedulingGroup %+v, want podGroupName %s", p.Name, g, job.Name)
		}
	}
	t.Logf("PodGroup %s (%s): minCount %d; %d pods in it", group.GetName(), version, minCount, len(pods.Items))
}

// newestPodGroupVersion is the newest version of scheduling.k8s.io that serves
// PodGroups, as discovery lists it.
func newestPodGroupVersion(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v1beta1", "v1alpha2"} {
		list, err := dc.ServerResourcesForGroupVersion("scheduling.k8s.io/" + v)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if r.Name == "podgroups" {
				return v
			}
		}
	}
	t.Fatal("the control plane serves no scheduling.k8s.io PodGroup")
	return ""
}

// managedBy lists the apiVersion each field manager wrote the object with.
func managedBy(o client.Object) string {
	var out []string
	for _, m := range o.GetManagedFields() {
		out = append(out, m.Manager+" apiVersion="+m.APIVersion)
	}
	return strings.Join(out, ", ")
}
