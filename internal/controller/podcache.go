package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// cachedPod is a pod as the cache holds it: what a reconcile reads, in a third of a
// corev1.Pod's room. A corev1.Pod takes 1,192 bytes before any of its content (its
// spec and status are structs of every field Kubernetes has), and its container
// another 408; with 20,000 pods cached that was 32 MB of empty fields. It is a
// client.Object, so the cache's indexers and event handlers take it as they take any
// object; reconciles read it through podIndex, as a *corev1.Pod again.
type cachedPod struct {
	// ObjectMeta has no labels when the pod carries tfk8s's three alone: replica
	// holds their values, and labels makes them again. A map of three takes 336 bytes.
	metav1.ObjectMeta
	replica  *ownLabels
	NodeName string
	// HostNetwork keeps a pod on the host's network from being polled for its
	// progress (progress.go).
	HostNetwork bool
	// Containers name the pod's TensorFlow container, only when it is not the one
	// named tensorflow (tfjob.TensorFlowStatus looks for that name when there are
	// none) or when it serves its progress, with that variable alone (progress.go).
	Containers []corev1.Container
	Status     podState
}

// ownLabels are the values of a pod's labels tfv1.LabelJobName,
// LabelReplicaType and LabelReplicaIndex.
type ownLabels struct{ job, replicaType, index string }

// compactLabels returns the values of labels when they are tfk8s's three alone.
func compactLabels(labels map[string]string) *ownLabels {
	job, okJob := labels[tfv1.LabelJobName]
	rt, okType := labels[tfv1.LabelReplicaType]
	index, okIndex := labels[tfv1.LabelReplicaIndex]
	if len(labels) != 3 || !okJob || !okType || !okIndex {
		return nil
	}
	return &ownLabels{job: job, replicaType: intern(rt), index: index}
}

// GetLabels makes the pod's labels again when they are held compactly.
func (p *cachedPod) GetLabels() map[string]string {
	if p.replica == nil {
		return p.Labels
	}
	return map[string]string{
		tfv1.LabelJobName:      p.replica.job,
		tfv1.LabelReplicaType:  p.replica.replicaType,
		tfv1.LabelReplicaIndex: p.replica.index,
	}
}

// podState is the part of a pod's status tfk8s reads.
type podState struct {
	Phase             corev1.PodPhase
	PodIP             string
	Reason, Message   string
	Conditions        []corev1.PodCondition
	ContainerStatuses []corev1.ContainerStatus
	// InitContainerStatuses are only the init containers that wait (waiting.go): an
	// agent's init container whose image cannot be pulled holds the pod back, while
	// the main container only says PodInitializing.
	InitContainerStatuses []corev1.ContainerStatus
}

// GetObjectKind has no kind to give: a cachedPod is never encoded or sent.
func (p *cachedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the pod, as runtime.Object asks.
func (p *cachedPod) DeepCopyObject() runtime.Object {
	out := &cachedPod{NodeName: p.NodeName, HostNetwork: p.HostNetwork}
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if p.replica != nil {
		replica := *p.replica
		out.replica = &replica
	}
	for i := range p.Containers {
		out.Containers = append(out.Containers, *p.Containers[i].DeepCopy())
	}
	out.Status = podState{Phase: p.Status.Phase, PodIP: p.Status.PodIP, Reason: p.Status.Reason, Message: p.Status.Message}
	for i := range p.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, *p.Status.Conditions[i].DeepCopy())
	}
	for i := range p.Status.ContainerStatuses {
		out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, *p.Status.ContainerStatuses[i].DeepCopy())
	}
	for i := range p.Status.InitContainerStatuses {
		out.Status.InitContainerStatuses = append(out.Status.InitContainerStatuses, *p.Status.InitContainerStatuses[i].DeepCopy())
	}
	return out
}

// pod is the cached pod as the *corev1.Pod reconciles read. It shares the cached
// pod's metadata and slices: read it, never change it in place.
func (p *cachedPod) pod() *corev1.Pod {
	meta := p.ObjectMeta
	meta.Labels = p.GetLabels()
	return &corev1.Pod{
		ObjectMeta: meta,
		Spec:       corev1.PodSpec{NodeName: p.NodeName, HostNetwork: p.HostNetwork, Containers: p.Containers},
		Status: corev1.PodStatus{
			Phase:                 p.Status.Phase,
			PodIP:                 p.Status.PodIP,
			Reason:                p.Status.Reason,
			Message:               p.Status.Message,
			Conditions:            p.Status.Conditions,
			ContainerStatuses:     p.Status.ContainerStatuses,
			InitContainerStatuses: p.Status.InitContainerStatuses,
		},
	}
}

// stripPod caches a pod as what tfk8s reads of it (cachedPod): its metadata (labels,
// annotations, owner, finalizers, deletion), the node it is bound to, whether it is
// on the host's network, its containers'
// statuses without images and IDs (and its waiting init containers'), its phase,
// reason, message and conditions.
func stripPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a cachedPod already, or a deleted pod's last known state
	}
	kept := &cachedPod{ObjectMeta: pod.ObjectMeta, NodeName: pod.Spec.NodeName, HostNetwork: pod.Spec.HostNetwork}
	if kept.replica = compactLabels(pod.Labels); kept.replica != nil {
		kept.Labels = nil
		// The job's name once: its label's and its owner reference's.
		for i, ref := range kept.OwnerReferences {
			if ref.Name == kept.replica.job {
				kept.OwnerReferences[i].Name = kept.replica.job
			}
		}
	}
	if c := tfjob.TensorFlowContainer(pod.Spec.Containers); c != nil {
		kept.Containers = keptContainer(c)
	}
	kept.Status = podState{
		Phase:      pod.Status.Phase,
		PodIP:      pod.Status.PodIP,
		Reason:     pod.Status.Reason,
		Message:    pod.Status.Message,
		Conditions: pod.Status.Conditions,
	}
	if n := len(pod.Status.ContainerStatuses); n > 0 {
		kept.Status.ContainerStatuses = make([]corev1.ContainerStatus, n)
		for i, cs := range pod.Status.ContainerStatuses {
			kept.Status.ContainerStatuses[i] = corev1.ContainerStatus{
				Name:                 cs.Name,
				Image:                waitingImage(cs),
				State:                cs.State,
				LastTerminationState: cs.LastTerminationState,
				RestartCount:         cs.RestartCount,
			}
		}
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.State.Waiting != nil {
			kept.Status.InitContainerStatuses = append(kept.Status.InitContainerStatuses,
				corev1.ContainerStatus{Name: cs.Name, Image: cs.Image, State: cs.State})
		}
	}
	return stripMetadata(kept)
}

// waitingImage is the image of a waiting container, which the ReplicasWaiting
// condition names, and "" for the others: the cache keeps no more than it reads.
func waitingImage(cs corev1.ContainerStatus) string {
	if cs.State.Waiting == nil {
		return ""
	}
	return cs.Image
}

// keptContainer is what the cache keeps of the TensorFlow container c: its name when
// it is not tensorflow, and the port it serves its progress on.
func keptContainer(c *corev1.Container) []corev1.Container {
	for _, e := range slices.Backward(c.Env) { // the last of a name is the one the container sees
		if e.Name == tfjob.EnvProgressPort {
			return []corev1.Container{{Name: c.Name, Env: []corev1.EnvVar{{Name: e.Name, Value: e.Value}}}}
		}
	}
	if c.Name != tfjob.ContainerName {
		return []corev1.Container{{Name: c.Name}}
	}
	return nil
}

// podOwnerIndex indexes cached pods by the namespace and name of the TFJob that
// controls them, so a reconcile reads its job's pods without scanning the namespace's,
// and sees with them the pods an earlier job of the same name left behind.
const podOwnerIndex = "tfk8s.io/owner"

// podIndex reads the cached pods of a job, whichever form the cache holds them in.
type podIndex struct{ toolscache.Indexer }

// newPodIndex indexes the manager cache's pods by their job. It must be called before
// the cache starts.
func newPodIndex(ctx context.Context, c cache.Cache) (*podIndex, error) {
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("getting the pod informer: %w", err)
	}
	if err := inf.AddIndexers(toolscache.Indexers{podOwnerIndex: indexByOwner}); err != nil {
		return nil, fmt.Errorf("indexing pods by job: %w", err)
	}
	indexed, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the pod informer (%T) has no indexer", inf)
	}
	return &podIndex{indexed.GetIndexer()}, nil
}

// indexByOwner keys a cached pod by the namespace and name of the TFJob controlling it.
func indexByOwner(obj any) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	names := podOwner(o)
	for i, name := range names {
		names[i] = o.GetNamespace() + "/" + name
	}
	return names, nil
}

// of returns the cached pods controlled by the job namespace/name, shared with the
// cache: read them, never change them in place.
func (x *podIndex) of(namespace, name string) ([]*corev1.Pod, error) {
	objs, err := x.ByIndex(podOwnerIndex, namespace+"/"+name)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		switch p := obj.(type) {
		case *cachedPod:
			pods = append(pods, p.pod())
		case *corev1.Pod: // --cache-full-objects
			shallow := *p
			pods = append(pods, &shallow)
		default:
			return nil, fmt.Errorf("listing pods: the cache holds a %T", obj)
		}
	}
	return pods, nil
}
