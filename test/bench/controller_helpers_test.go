package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
)

// watchPodCount returns a channel closed once want pods exist in namespace ns, as seen
// by a metadata informer started now (it lists, then watches, and re-lists on errors).
func watchPodCount(ctx context.Context, cfg *rest.Config, ns string, want int) (<-chan struct{}, error) {
	return watchCount(ctx, cfg, "pods", ns, want)
}

// watchCount is watchPodCount for any core resource ("services").
func watchCount(ctx context.Context, cfg *rest.Config, resource, ns string, want int) (<-chan struct{}, error) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	informer := metadatainformer.NewFilteredMetadataInformer(mc, schema.GroupVersionResource{Version: "v1", Resource: resource},
		ns, 0, cache.Indexers{}, nil).Informer()
	done := make(chan struct{})
	stop := make(chan struct{})
	var once sync.Once
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
		if len(informer.GetStore().ListKeys()) >= want {
			once.Do(func() { close(done); close(stop) })
		}
	}})
	if err != nil {
		return nil, err
	}
	go informer.Run(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("%s informer for %s did not sync", resource, ns)
	}
	return done, nil
}

// podsOf builds the pods the controller creates for job in namespace ns, minus what
// would tie them to it (owner, finalizer, job label), so the raw loop sends the same
// bytes.
func podsOf(b testing.TB, job *tfv1.TFJob, ns string) []*corev1.Pod {
	b.Helper()
	job.UID = "00000000-0000-0000-0000-000000000000"
	job.Namespace = ns
	pods := constructPods(b, job)
	for _, pod := range pods {
		pod.OwnerReferences, pod.Finalizers = nil, nil
		delete(pod.Labels, tfv1.LabelJobName)
	}
	return pods
}

// constructPods builds every pod of job, as the controller does.
func constructPods(b testing.TB, job *tfv1.TFJob) []*corev1.Pod {
	b.Helper()
	var pods []*corev1.Pod
	for _, rt := range tfv1.ReplicaTypes {
		spec := job.Spec.TFReplicaSpecs[rt]
		if spec == nil {
			continue
		}
		for i := range *spec.Replicas {
			pod, err := controller.ConstructPod(job, rt, i, controller.PodOptions{})
			if err != nil {
				b.Fatal(err)
			}
			pods = append(pods, pod)
		}
	}
	return pods
}

func createRaw(ctx context.Context, c client.Client, ns string, pods []*corev1.Pod) error {
	objs := make([]client.Object, len(pods))
	for i, p := range pods {
		p = p.DeepCopy()
		p.Namespace = ns
		objs[i] = p
	}
	return createParallel(ctx, c, objs)
}

// createParallel creates objects with 32 parallel creators.
func createParallel(ctx context.Context, c client.Client, objs []client.Object) error {
	return inParallel(objs, func(obj client.Object) error { return c.Create(ctx, obj) })
}

// inParallel calls do for every item, 32 at a time, and returns the first error.
func inParallel[T any](items []T, do func(T) error) error {
	work := make(chan T)
	errs := make(chan error, len(items))
	var wg sync.WaitGroup
	for range creators {
		wg.Go(func() {
			for item := range work {
				if err := do(item); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, item := range items {
		work <- item
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

func waitService(ctx context.Context, c client.Client, ns, name string) error {
	deadline := time.Now().Add(15 * time.Minute)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Service{}); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("service %s/%s not created", ns, name)
}

func waitDefaultServiceAccount(b *testing.B, c client.Client, ns string) {
	b.Helper()
	for range 600 {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{}); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("namespace %s has no default ServiceAccount", ns)
}
