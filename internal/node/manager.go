package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// hostFiles are the host's /etc/hosts and resolv.conf, read once at start.
type hostFiles struct {
	hosts  []byte
	resolv resolvConf
}

// manager runs the pods bound to the node, one worker each.
type manager struct {
	opts        Options
	client      kubernetes.Interface
	log         logr.Logger
	events      record.EventBroadcaster
	recorder    record.EventRecorder
	runc        runc
	net         network
	ipam        *ipam
	gpus        *gpuAllocator
	cgroups     cgroups
	host        hostFiles
	images      *imageStore
	allocatable corev1.ResourceList
	// apiService is where pods reach the API server: every container's
	// KUBERNETES_SERVICE_* variables.
	apiService apiService
	// ctx outlives the node's own context: stopping the node still needs the API to
	// write the pods' final statuses.
	ctx context.Context

	mu       sync.Mutex
	workers  map[types.UID]*podWorker
	stopping bool
	wg       sync.WaitGroup
	lister   corelisters.PodLister
}

// layersDir holds the containers' overlay upper layers, on a tmpfs.
func (m *manager) layersDir() string { return filepath.Join(m.opts.StateDir, "layers") }

// podLogDir is where a pod's container logs live, named as the kubelet names them.
func (m *manager) podLogDir(pod *corev1.Pod) string {
	return filepath.Join(m.opts.StateDir, "logs", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// watch starts the informer on the pods bound to the node and returns once its cache
// has synced.
func (m *manager) watch(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(m.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", m.opts.NodeName).String()
	}))
	inf := factory.Core().V1().Pods()
	m.lister = inf.Lister()
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.sync(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { m.sync(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				m.podGone(pod)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing the %v cache", typ)
		}
	}
	return nil
}

// sync hands a pod to its worker, starting one for a pod not yet finished.
func (m *manager) sync(pod *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.workers[pod.UID]; ok {
		w.update(pod)
		return
	}
	if m.stopping {
		return
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		// Finished before this node started: nothing runs; remove it when asked to.
		if pod.DeletionTimestamp != nil {
			go m.deleteFinished(pod)
		}
		return
	}
	w := newPodWorker(m, pod)
	m.workers[pod.UID] = w
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		w.run()
		m.mu.Lock()
		delete(m.workers, pod.UID)
		m.mu.Unlock()
	}()
	w.update(pod)
	w.log.V(2).Info("Pod admitted")
}

// podGone stops the worker of a pod whose object was removed, at once.
func (m *manager) podGone(pod *corev1.Pod) {
	m.mu.Lock()
	w, ok := m.workers[pod.UID]
	m.mu.Unlock()
	if !ok {
		m.removeLogs(pod)
		return
	}
	w.markGone()
	w.requestStop(0)
}

// deleteFinished removes a finished pod's object and its logs.
func (m *manager) deleteFinished(pod *corev1.Pod) {
	err := m.client.CoreV1().Pods(pod.Namespace).Delete(m.ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		m.log.Error(err, "Deleting finished pod", "pod", pod.Namespace+"/"+pod.Name)
	}
	m.removeLogs(pod)
}

// removeLogs deletes a pod's log directory.
func (m *manager) removeLogs(pod *corev1.Pod) {
	if err := os.RemoveAll(m.podLogDir(pod)); err != nil {
		m.log.Error(err, "Removing pod logs")
	}
}

// removeStaleLogs deletes the log directories of pods that no longer exist.
func (m *manager) removeStaleLogs() {
	entries, err := os.ReadDir(filepath.Join(m.opts.StateDir, "logs"))
	if err != nil {
		return
	}
	live := map[string]bool{}
	pods, _ := m.lister.List(labels.Everything())
	for _, p := range pods {
		live[filepath.Base(m.podLogDir(p))] = true
	}
	for _, e := range entries {
		if !live[e.Name()] {
			_ = os.RemoveAll(filepath.Join(m.opts.StateDir, "logs", e.Name()))
		}
	}
}

// shutdown stops every pod within its own grace period (capped by the node's shutdown
// grace period, if set): SIGTERM, then SIGKILL once the grace period has passed. It
// fails them as the kubelet's graceful node shutdown does, and waits for the workers
// to finish.
func (m *manager) shutdown() {
	m.mu.Lock()
	m.stopping = true
	workers := make([]*podWorker, 0, len(m.workers))
	for _, w := range m.workers {
		workers = append(workers, w)
	}
	m.mu.Unlock()
	var longest time.Duration
	for _, w := range workers {
		grace := shutdownGrace(w.currentPod(), m.opts.ShutdownGracePeriod)
		longest = max(longest, grace)
		w.markShutdown()
		w.requestStop(grace)
	}
	m.log.Info("Stopping pods", "pods", len(workers), "longestGracePeriod", longest)
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(longest + killWait + 10*time.Second):
		m.log.Info("Pods still stopping after their grace periods; cleaning up regardless")
	}
}

// shutdownGrace is how long a pod has to stop when the node stops: its own
// terminationGracePeriodSeconds (the API server's default, 30 s, if unset), at most
// limit when limit is set.
func shutdownGrace(pod *corev1.Pod, limit time.Duration) time.Duration {
	grace := time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if limit > 0 {
		grace = min(grace, limit)
	}
	return grace
}

// worker finds the worker of a pod by namespace and name.
func (m *manager) worker(namespace, name string) *podWorker {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.workers {
		if p := w.currentPod(); p.Namespace == namespace && p.Name == name {
			return w
		}
	}
	return nil
}
