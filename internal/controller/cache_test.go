package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/fixtures"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// asServed adds to a pod what the API server and the kubelet add and tfk8s never
// reads: managed fields, kubectl's copy, the service account's token volume, images,
// resources, environment, addresses.
func asServed(pod *corev1.Pod) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "tfk8s-controller", Operation: metav1.ManagedFieldsOperationApply}}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[lastApplied] = `{"spec":{}}`
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644)}}})
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}}
	pod.Spec.SchedulerName = "default-scheduler"
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		c.Env = append(c.Env, corev1.EnvVar{Name: "TF_CONFIG", Value: `{"cluster":{}}`})
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "kube-api-access-x", MountPath: "/var/run/secrets"})
	}
	pod.Status.HostIP, pod.Status.PodIP = "10.0.0.1", "10.1.0.7"
	pod.Status.StartTime = &metav1.Time{Time: now.Add(-time.Minute)}
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		cs.Image, cs.ImageID, cs.ContainerID = "tensorflow/tensorflow:2.16.1", "sha256:0123", "containerd://abc"
	}
	return pod
}

// TestStripPod checks what a reconcile reads of a cached pod: its metadata but managed
// fields and kubectl's copy, the node, the TensorFlow container's name when it is not
// "tensorflow", and the status tfk8s reads; and that the cached form copies whole.
func TestStripPod(t *testing.T) {
	finished := metav1.NewTime(now.Add(-time.Second))
	failed := worker(1).Phase(corev1.PodFailed).Reason("Evicted").ExitCode(137).RestartCount(2).
		Condition(corev1.DisruptionTarget).Finalizer().Obj()
	failed.Spec.NodeName = "node-1"
	failed.Status.Message = "The node was low on resource: memory."
	failed.Status.ContainerStatuses[0].State.Terminated.FinishedAt = finished
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: finished}}

	labelled := worker(2).Finalizer().Obj()
	labelled.Labels["team"] = "vision"
	lead := worker(0).Obj()
	lead.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TFK8S_NAMESPACE", Value: "ml"}, {Name: tfjob.EnvProgressPort, Value: "2230"}}
	named := worker(3).Obj()
	named.Spec.Containers = []corev1.Container{{Name: "trainer"}, {Name: "sidecar"}}
	named.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "sidecar", RestartCount: 1}, {Name: "trainer", RestartCount: 4}}
	pulling := worker(4).Waiting("PodInitializing", "").Obj()
	pullWait := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}
	pulling.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "fetch", Image: "agent:1", State: pullWait},
		{Name: "done", Image: "agent:1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}

	cases := []struct {
		name string
		pod  *corev1.Pod
		want func(meta metav1.ObjectMeta) *corev1.Pod
		// tensorflow is the restart count of the container TensorFlowStatus finds.
		tensorflow int32
	}{
		{"failed", failed, func(meta metav1.ObjectMeta) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{NodeName: "node-1"}, Status: corev1.PodStatus{
				Phase: corev1.PodFailed, PodIP: "10.1.0.7", Reason: "Evicted", Message: "The node was low on resource: memory.",
				Conditions:        []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "tensorflow", RestartCount: 2, State: terminated}},
			}}
		}, 2},
		{"labels of its own", labelled, func(meta metav1.ObjectMeta) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: meta, Status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.1.0.7"}}
		}, -1},
		{"the lead replica keeps the port of its progress", lead, func(meta metav1.ObjectMeta) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow",
				Env: []corev1.EnvVar{{Name: tfjob.EnvProgressPort, Value: "2230"}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.1.0.7"}}
		}, -1},
		{"TensorFlow in a container of another name", named, func(meta metav1.ObjectMeta) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "trainer"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.1.0.7", ContainerStatuses: named.Status.ContainerStatuses}}
		}, 4},
		{"an init container waiting on its image keeps its wait and image", pulling, func(meta metav1.ObjectMeta) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: meta, Status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.1.0.7",
				ContainerStatuses:     pulling.Status.ContainerStatuses,
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "fetch", Image: "agent:1", State: pullWait}}}}
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stripPod(asServed(tc.pod))
			if err != nil {
				t.Fatal(err)
			}
			cached := got.(*cachedPod)
			meta := *tc.pod.ObjectMeta.DeepCopy()
			meta.Annotations = map[string]string{}
			if diff := cmp.Diff(tc.want(meta), cached.pod()); diff != "" {
				t.Errorf("the pod a reconcile reads (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.pod.Labels, cached.GetLabels()); diff != "" {
				t.Errorf("labels the cache's indexers read (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(cached.pod(), cached.DeepCopyObject().(*cachedPod).pod()); diff != "" {
				t.Errorf("a deep copy differs (-original +copy):\n%s", diff)
			}
			if again, _ := stripPod(cached); again != got {
				t.Errorf("a cached pod stripped again is another object")
			}
			restarts := int32(-1)
			if s := tfjob.TensorFlowStatus(cached.pod()); s != nil {
				restarts = s.RestartCount
			}
			if restarts != tc.tensorflow {
				t.Errorf("TensorFlowStatus found a container restarted %d times, want %d", restarts, tc.tensorflow)
			}
		})
	}
}

// TestStrippedPodsObserveTheSame checks that a reconcile decides the same on stripped
// pods as on whole ones: the job's status, its failures and retries, and the message
// of a scheduling timeout.
func TestStrippedPodsObserveTheSame(t *testing.T) {
	created := metav1.NewTime(now.Add(-time.Hour))
	unbound := worker(3).Finalizer().Obj()
	unbound.CreationTimestamp = created
	unbound.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}
	pods := []*corev1.Pod{
		worker(0).Phase(corev1.PodSucceeded).ExitCode(0).Finalizer().Obj(),
		worker(1).Phase(corev1.PodFailed).ExitCode(137).RestartCount(1).Finalizer().Obj(),
		worker(2).Phase(corev1.PodFailed).Reason("Evicted").ExitCode(1).Condition(corev1.DisruptionTarget).Finalizer().Obj(),
		unbound,
	}
	for _, policy := range []tfv1.RestartPolicy{tfv1.RestartPolicyNever, tfv1.RestartPolicyExitCode, tfv1.RestartPolicyOnFailure} {
		t.Run(string(policy), func(t *testing.T) {
			job := testutil.MakeTFJob("j", "ml").Workers(4).Obj()
			job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].RestartPolicy = policy
			job.Spec.RunPolicy.SchedulingPolicy = &tfv1.SchedulingPolicy{ScheduleTimeoutSeconds: ptr.To[int32](60)}
			var whole, stripped []*corev1.Pod
			for _, p := range pods {
				whole = append(whole, asServed(p))
				s, err := stripPod(asServed(p))
				if err != nil {
					t.Fatal(err)
				}
				stripped = append(stripped, s.(*cachedPod).pod())
			}
			want := summarize(observePods(job.DeepCopy(), whole, now))
			if diff := cmp.Diff(want, summarize(observePods(job.DeepCopy(), stripped, now))); diff != "" {
				t.Errorf("observation on stripped pods (-whole +stripped):\n%s", diff)
			}
			wantMsg, _ := scheduleTimedOut(job, whole, now.Time)
			gotMsg, _ := scheduleTimedOut(job, stripped, now.Time)
			if wantMsg == "" || gotMsg != wantMsg {
				t.Errorf("schedule timeout on stripped pods: %q, on whole pods: %q", gotMsg, wantMsg)
			}
		})
	}
}

// TestStripOwnedObjects checks that Services keep their metadata alone and TensorBoard
// Deployments their metadata and status, without managed fields.
func TestStripOwnedObjects(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "j", Namespace: "ml", OwnerReferences: []metav1.OwnerReference{fixtures.OwnerRef},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "tfk8s-controller"}}}
	kept := metav1.ObjectMeta{Name: "j", Namespace: "ml", OwnerReferences: []metav1.OwnerReference{fixtures.OwnerRef}}
	cases := []struct {
		name      string
		transform func(any) (any, error)
		in, want  any
	}{
		{"service", keepMetadataOnly,
			&corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{ClusterIP: "None", Selector: map[string]string{"a": "b"}}},
			&corev1.Service{ObjectMeta: kept}},
		{"deployment", stripDeployment,
			&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}, Status: appsv1.DeploymentStatus{ReadyReplicas: 1}},
			&appsv1.Deployment{ObjectMeta: kept, Status: appsv1.DeploymentStatus{ReadyReplicas: 1}}},
		{"tfjob", stripMetadata,
			&tfv1.TFJob{ObjectMeta: meta},
			&tfv1.TFJob{ObjectMeta: kept}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.transform(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("cached object (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCacheOptionsOneEntryPerKind checks that each cached kind has one entry, with its
// transform: the entries are keyed by pointer, and of two entries for pods the cache
// would take either, whole pods as likely as stripped ones.
func TestCacheOptionsOneEntryPerKind(t *testing.T) {
	for _, full := range []bool{false, true} {
		kinds := map[string]int{}
		transformed := 0
		for obj, by := range CacheOptions(full).ByObject {
			kinds[fmt.Sprintf("%T", obj)]++
			if by.Transform != nil {
				transformed++
			}
		}
		want := map[string]int{"*v1.Pod": 1, "*v1.Service": 1, "*v1.Deployment": 1}
		if diff := cmp.Diff(want, kinds); diff != "" {
			t.Errorf("full=%v: cached kinds (-want +got):\n%s", full, diff)
		}
		if wantTransformed := map[bool]int{false: 3, true: 0}[full]; transformed != wantTransformed {
			t.Errorf("full=%v: %d kinds transformed, want %d", full, transformed, wantTransformed)
		}
	}
}

// TestPodIndexReadsEitherForm checks that a job's pods are read from the index whether
// the cache holds them stripped or whole (--cache-full-objects), that pods of other
// jobs are not, and that a reconcile changing what it read leaves the cache as it was.
func TestPodIndexReadsEitherForm(t *testing.T) {
	idx := podIndex{toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{podOwnerIndex: indexByOwner})}
	owned := func(p *corev1.Pod, job string) *corev1.Pod {
		ref := fixtures.OwnerRef
		ref.Name = job
		p.OwnerReferences = []metav1.OwnerReference{ref}
		return p
	}
	stripped, err := stripPod(asServed(owned(worker(0).Phase(corev1.PodRunning).Obj(), "j")))
	if err != nil {
		t.Fatal(err)
	}
	whole := owned(worker(1).Phase(corev1.PodPending).Obj(), "j")
	other := owned(worker(0).Obj(), "k")
	other.Name = "k-worker-0"
	for _, obj := range []any{stripped, whole, other} {
		if err := idx.Add(obj); err != nil {
			t.Fatal(err)
		}
	}

	pods, err := idx.of("ml", "j")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]corev1.PodPhase{}
	for _, p := range pods {
		got[p.Name] = p.Status.Phase
		p.Status.Phase = corev1.PodFailed
	}
	if diff := cmp.Diff(map[string]corev1.PodPhase{"j-worker-0": corev1.PodRunning, "j-worker-1": corev1.PodPending}, got); diff != "" {
		t.Errorf("pods of job ml/j (-want +got):\n%s", diff)
	}
	again, _ := idx.of("ml", "j")
	for _, p := range again {
		if p.Status.Phase == corev1.PodFailed {
			t.Errorf("%s: a change to a pod read from the index reached the cache", p.Name)
		}
	}
}
