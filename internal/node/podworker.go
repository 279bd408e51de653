package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

const (
	// sandboxRetryMax caps the delay between attempts to set a pod's sandbox up (a
	// volume's ConfigMap may not exist yet).
	sandboxRetryMax = 10 * time.Second
	// nodeShutdownMessage is the kubelet's message for pods stopped with the node.
	nodeShutdownMessage = "Pod was terminated in response to imminent node shutdown."
	// gpuWait bounds how long a pod waits for GPUs that deleted pods still hold.
	gpuWait = time.Minute
)

// podWorker runs one pod from admission to deletion: its sandbox, init containers in
// order, then its containers under the restart policy, and its termination.
type podWorker struct {
	m   *manager
	uid types.UID
	log logr.Logger

	mu         sync.Mutex
	pod        *corev1.Pod
	inits      []*containerRunner
	containers []*containerRunner
	sb         *sandbox
	startTime  *metav1.Time
	// failed, reason and message fail the pod outright.
	failed          bool
	reason, message string
	// gone: the pod object no longer exists. shutdown: the node is stopping.
	gone, shutdown bool
	stopDeadline   time.Time

	stopCh   chan struct{}
	stopOnce sync.Once
	statusCh chan struct{}
	statusMu sync.Mutex
	done     chan struct{}
}

func newPodWorker(m *manager, pod *corev1.Pod) *podWorker {
	w := &podWorker{
		m: m, uid: pod.UID, pod: pod,
		log:       m.log.WithValues("pod", klog.KObj(pod)),
		startTime: ptr.To(metav1.Now()),
		stopCh:    make(chan struct{}),
		statusCh:  make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	if pod.Status.StartTime != nil {
		w.startTime = pod.Status.StartTime
	}
	previous := map[string]corev1.ContainerStatus{}
	for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		previous[s.Name] = s
	}
	created := func(name string) int32 {
		s, ok := previous[name]
		if ok && (s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil) {
			return s.RestartCount + 1
		}
		return 0
	}
	for i, c := range pod.Spec.InitContainers {
		reason := ReasonPodInitializing
		if i == 0 {
			reason = ReasonContainerCreating
		}
		w.inits = append(w.inits, newContainerRunner(w, c, true, reason, created(c.Name)))
	}
	for _, c := range pod.Spec.Containers {
		reason := ReasonContainerCreating
		if len(pod.Spec.InitContainers) > 0 {
			reason = ReasonPodInitializing
		}
		w.containers = append(w.containers, newContainerRunner(w, c, false, reason, created(c.Name)))
	}
	return w
}

// run drives the pod to its end, then waits for its deletion to remove it.
func (w *podWorker) run() {
	defer close(w.done)
	ctx := w.m.ctx
	quit := make(chan struct{})
	statusDone := make(chan struct{})
	go func() {
		defer close(statusDone)
		w.statusLoop(ctx, quit)
	}()
	w.notify()
	w.execute(ctx)
	w.teardown()
	if err := w.syncStatus(ctx); err != nil {
		w.log.Error(err, "Writing the final pod status")
	}
	close(quit)
	<-statusDone
	w.log.V(2).Info("Pod finished; waiting for its deletion")
	select {
	case <-w.stopCh:
	case <-ctx.Done():
		return
	}
	w.mu.Lock()
	gone, shutdown := w.gone, w.shutdown
	w.mu.Unlock()
	if shutdown {
		return
	}
	if !gone {
		w.deleteFromAPI(ctx)
	}
	w.m.removeLogs(w.currentPod())
}

// execute admits the pod, sets up its sandbox, runs its init containers and containers,
// and stops them when the pod must stop. It returns once none runs.
func (w *podWorker) execute(ctx context.Context) {
	if err := checkHostPaths(w.currentPod(), w.m.opts.AllowedHostPaths); err != nil {
		w.event(corev1.EventTypeWarning, ReasonHostPathNotAllowed, "%v", err)
		w.fail(ReasonHostPathNotAllowed, err.Error())
		return
	}
	if err := w.admit(); err != nil {
		w.fail(ReasonUnexpectedAdmissionError, err.Error())
		return
	}
	// Deferred in this order, execDone closes first, then the stopper below is waited
	// for: the other way round, a pod whose containers had all exited would wait for
	// its deletion to return, keeping its GPUs, network and mounts until then.
	execDone, stopped := make(chan struct{}), make(chan struct{})
	defer func() { <-stopped }()
	defer close(execDone)
	go func() {
		defer close(stopped)
		select {
		case <-w.stopCh:
			w.stopRunners(ctx)
		case <-execDone:
		}
	}()

	if !w.setUpSandbox(ctx) {
		return
	}
	for _, r := range w.inits {
		r.setWaiting(ReasonContainerCreating, "")
		exit := r.supervise(ctx)
		if w.stopping() || exit == nil || exit.terminated.ExitCode != 0 {
			return
		}
	}
	var wg sync.WaitGroup
	for _, r := range w.containers {
		if len(w.inits) > 0 {
			r.setWaiting(ReasonContainerCreating, "")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.supervise(ctx)
		}()
	}
	wg.Wait()
}

// setUpSandbox retries creating the sandbox until it works or the pod must stop.
func (w *podWorker) setUpSandbox(ctx context.Context) bool {
	delay := 250 * time.Millisecond
	for {
		err := w.createSandbox(ctx)
		if err == nil {
			return true
		}
		w.log.Error(err, "Setting up the pod sandbox")
		w.event(corev1.EventTypeWarning, ReasonSandboxFailed, "Setting up the pod: %v", err)
		w.teardown()
		select {
		case <-w.stopCh:
			return false
		case <-time.After(delay):
		}
		delay = min(delay*2, sandboxRetryMax)
	}
}

// admit reserves the pod's GPUs and refuses a pod that cannot run here.
func (w *podWorker) admit() error {
	pod := w.currentPod()
	if n := podGPUCount(pod); n > 0 {
		indices, err := w.allocateGPUs(n)
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.sb = &sandbox{gpus: containerGPUs(pod, indices)}
		w.mu.Unlock()
	}
	if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		for _, r := range append(append([]*containerRunner{}, w.inits...), w.containers...) {
			if r.created > 0 {
				return fmt.Errorf("container %s ran before the node restarted and the restart policy is Never", r.spec.Name)
			}
		}
	}
	return nil
}

// allocateGPUs reserves the pod's GPUs. The scheduler counts only pods that exist, so
// GPUs it sees free may still be held by a deleted pod whose containers are stopping:
// wait for them a while rather than fail the pod.
func (w *podWorker) allocateGPUs(n int) ([]int, error) {
	deadline := time.Now().Add(gpuWait)
	for {
		indices, err := w.m.gpus.allocate(string(w.uid), n)
		if err == nil || time.Now().After(deadline) {
			return indices, err
		}
		select {
		case <-w.stopCh:
			return nil, err
		case <-time.After(stopPoll):
		}
	}
}

// stopRunners stops every running container at once.
func (w *podWorker) stopRunners(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range append(append([]*containerRunner{}, w.inits...), w.containers...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.stopContainer(ctx)
		}()
	}
	wg.Wait()
}

// update takes a newer version of the pod; a deletion timestamp stops it within its
// grace period.
func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	w.pod = pod
	w.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		grace := time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
		if g := pod.DeletionGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
		w.requestStop(grace)
	}
}

// requestStop stops the pod within grace; a later, shorter grace brings the deadline
// forward.
func (w *podWorker) requestStop(grace time.Duration) {
	w.mu.Lock()
	d := time.Now().Add(grace)
	if w.stopDeadline.IsZero() || d.Before(w.stopDeadline) {
		w.stopDeadline = d
	}
	w.mu.Unlock()
	w.stopOnce.Do(func() { close(w.stopCh) })
	w.notify()
}

// markGone records that the pod object was removed from the API.
func (w *podWorker) markGone() {
	w.mu.Lock()
	w.gone = true
	w.mu.Unlock()
}

// markShutdown fails the pod because the node is stopping.
func (w *podWorker) markShutdown() {
	w.mu.Lock()
	w.shutdown = true
	w.mu.Unlock()
	w.fail(ReasonNodeShutdown, nodeShutdownMessage)
}

// fail fails the pod outright.
func (w *podWorker) fail(reason, message string) {
	w.mu.Lock()
	w.failed, w.reason, w.message = true, reason, message
	w.mu.Unlock()
	w.notify()
}

// stopping reports whether the pod must stop.
func (w *podWorker) stopping() bool {
	select {
	case <-w.stopCh:
		return true
	default:
		return false
	}
}

// deadline is when the pod's containers get SIGKILL.
func (w *podWorker) deadline() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopDeadline
}

// currentPod is the latest version of the pod seen.
func (w *podWorker) currentPod() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

func (w *podWorker) restartPolicy() corev1.RestartPolicy { return w.currentPod().Spec.RestartPolicy }

// podRef names the pod as the kubelet's messages do.
func (w *podWorker) podRef() string {
	pod := w.currentPod()
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// event records an event about the pod.
func (w *podWorker) event(eventType, reason, format string, args ...any) {
	w.m.recorder.Eventf(w.currentPod(), eventType, reason, format, args...)
}

// api reads the pod's ConfigMaps, Secrets, claims and tokens.
func (w *podWorker) api() podAPI {
	allowed := append(slices.Clone(w.m.opts.AllowedHostPaths), filepath.Join(w.m.opts.StateDir, "pv"))
	return podAPI{ctx: w.m.ctx, client: w.m.client, ns: w.currentPod().Namespace, allowed: allowed}
}

// podDir holds the pod's sandbox files and volumes.
func (w *podWorker) podDir() string { return filepath.Join(w.m.opts.StateDir, "pods", string(w.uid)) }

// bundlePaths are the files of a container's bundle and root overlay.
func (w *podWorker) bundlePaths(container string) bundlePaths {
	dir := filepath.Join(w.podDir(), "containers", container)
	layer := filepath.Join(w.m.layersDir(), string(w.uid), container)
	return bundlePaths{
		dir:            dir,
		rootfs:         filepath.Join(dir, "rootfs"),
		upper:          filepath.Join(layer, "upper"),
		work:           filepath.Join(layer, "work"),
		config:         filepath.Join(dir, "config.json"),
		pidFile:        filepath.Join(dir, "pid"),
		runcLog:        filepath.Join(dir, "runc.log"),
		terminationLog: filepath.Join(dir, "termination-log"),
	}
}

// logPath is the log file of a container's instance n.
func (w *podWorker) logPath(container string, n int32) string {
	return filepath.Join(w.m.podLogDir(w.currentPod()), container, fmt.Sprintf("%d.log", n))
}

// runner finds a container's runner by name.
func (w *podWorker) runner(name string) *containerRunner {
	for _, r := range append(append([]*containerRunner{}, w.inits...), w.containers...) {
		if r.spec.Name == name {
			return r
		}
	}
	return nil
}

// teardown removes the pod's sandbox: mounts, network, IP, GPUs, cgroups and files.
func (w *podWorker) teardown() {
	w.mu.Lock()
	sb := w.sb
	if sb != nil {
		sb.ready = false
	}
	w.mu.Unlock()
	uid := string(w.uid)
	dir := w.podDir()
	var errs []error
	errs = append(errs, unmountUnder(dir))
	if sb == nil || sb.netnsPath != "" {
		errs = append(errs, w.m.net.removePod(uid))
	}
	errs = append(errs, w.m.ipam.release(uid), w.m.cgroups.removePod(uid), os.RemoveAll(filepath.Join(w.m.layersDir(), uid)))
	if left, err := MountsUnder(dir); err != nil || len(left) > 0 {
		errs = append(errs, fmt.Errorf("keeping %s: mounts remain under it: %v %w", dir, left, err))
	} else {
		errs = append(errs, os.RemoveAll(dir))
	}
	if err := joinErrs("tearing the pod sandbox down", errs); err != nil {
		w.log.Error(err, "Cleaning up")
	}
	if w.stopping() || w.podFinished() {
		w.m.gpus.release(uid)
	}
}

// podFinished reports whether no container will run again.
func (w *podWorker) podFinished() bool {
	snap := w.snapshot()
	phase := podPhase(w.currentPod(), snap)
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}
