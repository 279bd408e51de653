package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/logline"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// DefaultArtifactsPrefix is where submit backs up artifacts and logs, under the bucket.
const DefaultArtifactsPrefix = "runs"

// Logs gathers the logs of one job, as tfk8s logs prints them and the dashboard streams them.
type Logs struct {
	// Storage finds the job's files in S3.
	Storage Storage
	// Clients reach the cluster, in the job's namespace.
	Clients *Clients
	Name    string
	Replica string // "" for all
	Which   Attempt
	Out     *LineWriter
	// ErrOut gets the notes: a replica with no logs yet, a log read from S3.
	ErrOut io.Writer
	job    *tfv1.TFJob // nil once the job is deleted

	s3Mu     sync.Mutex
	s3Listed bool
	s3       *storage.Client
	s3Base   storage.URI            // where the job's runs are stored
	stored   map[string]*storedLogs // replica → its logs in S3
	s3Error  error
}

// Print prints the logs there are now: the chosen attempt of each replica, from its
// live pod where Kubernetes has it, else from S3.
func (l *Logs) Print(ctx context.Context) error {
	job, err := Get(ctx, l.Clients.Client, l.Clients.Namespace, l.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	l.job = job
	var pods []corev1.Pod
	if job != nil {
		if pods, err = Pods(ctx, l.Clients.Client, job.Namespace, job.Name); err != nil {
			return err
		}
	}
	live := map[string]*corev1.Pod{}
	for i := range pods {
		if hasLogs(&pods[i]) {
			live[ReplicaName(&pods[i])] = &pods[i]
		}
	}
	expected := l.wanted(Replicas(job))
	replicas := l.wanted(slices.Collect(maps.Keys(live)))
	if job == nil || len(replicas) < len(expected) || l.Which != (Attempt{}) {
		// Some replica has no live pod, or an earlier attempt is asked for: see what
		// S3 has.
		stored, _, s3err := l.s3Logs(ctx)
		replicas = l.wanted(append(replicas, slices.Collect(maps.Keys(stored))...))
		if len(replicas) == 0 {
			return l.noLogs(err, s3err)
		}
		for _, r := range expected {
			if _, ok := slices.BinarySearchFunc(replicas, r, CompareReplicas); !ok && l.Which == (Attempt{}) {
				fmt.Fprintf(l.ErrOut, "%s: no logs: its pod has not started, and S3 has none\n", r)
			}
		}
	}

	errs := make([]error, len(replicas))
	Parallel(len(replicas), len(replicas), func(i int) {
		errs[i] = l.printReplica(ctx, replicas[i], live[replicas[i]])
	})
	return l.reportMissing(replicas, errs)
}

// printReplica prints the chosen attempt of one replica: the current one from its live
// pod (the previous one from the pod's previous container, if it restarted), else
// from S3.
func (l *Logs) printReplica(ctx context.Context, replica string, pod *corev1.Pod) error {
	var liveErr error
	switch {
	case l.Which.Number > 0 || pod == nil:
	case !l.Which.Previous && podEnding(pod):
		// The kubelet may already have removed the container of a pod that ended or
		// is being deleted (it then answers a line saying so, not the log): the copy
		// the agent stored when its command ended comes first.
		if l.streamS3(ctx, replica) == nil {
			return nil
		}
		liveErr = l.streamPod(ctx, pod, false, false)
	case !l.Which.Previous:
		liveErr = l.streamPod(ctx, pod, false, false)
	case restarted(pod):
		liveErr = l.streamPod(ctx, pod, false, true)
	default:
		// Not restarted: the previous attempt ran in an earlier pod, which S3 has.
		return l.streamS3(ctx, replica)
	}
	if pod != nil && l.Which.Number == 0 && liveErr == nil {
		return nil
	}
	if err := l.streamS3(ctx, replica); err != nil {
		return errors.Join(liveErr, err)
	}
	if liveErr != nil {
		fmt.Fprintf(l.ErrOut, "%s: no live log (%v): printed the copy in S3\n", replica, liveErr)
	}
	return nil
}

// podEnding reports whether the pod is being deleted or its TensorFlow container has
// terminated.
func podEnding(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return true
	}
	c := tfjob.TensorFlowContainer(pod.Spec.Containers)
	for _, s := range pod.Status.ContainerStatuses {
		if c != nil && s.Name == c.Name && s.State.Terminated != nil {
			return true
		}
	}
	return false
}

// reportMissing returns the errors of the replicas; a replica that lacks the attempt
// asked for is only a note on the error stream when another replica had it.
func (l *Logs) reportMissing(replicas []string, errs []error) error {
	var missing *missingAttemptError
	printed := slices.ContainsFunc(errs, func(err error) bool { return err == nil })
	for i, err := range errs {
		if printed && errors.As(err, &missing) {
			fmt.Fprintf(l.ErrOut, "%s: %v\n", replicas[i], missing)
			errs[i] = nil
		}
	}
	return errors.Join(errs...)
}

// restarted reports whether a pod's main container has run before, so that
// Kubernetes keeps the log of its previous run.
func restarted(pod *corev1.Pod) bool {
	restarts, _ := ContainerSummary(pod)
	return restarts > 0
}

// Follow streams the logs of every replica of the job from its pod once it has
// started, until the pod ends; a replica whose pod never runs again before the job
// finishes is printed from S3.
func (l *Logs) Follow(ctx context.Context) error {
	job, err := Get(ctx, l.Clients.Client, l.Clients.Namespace, l.Name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return l.Print(ctx) // nothing to follow: what S3 has is all there is
		}
		return err
	}
	l.job = job
	replicas := l.wanted(Replicas(job))
	if len(replicas) == 0 {
		return fmt.Errorf("tfjob %s has no replica %s", l.Name, l.Replica)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(replicas))
	for i, r := range replicas {
		wg.Go(func() { errs[i] = l.followReplica(ctx, r) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// followReplica waits until the replica's pod has started and streams its log, or,
// if the job finishes first, prints its log from S3. While it waits, it says once per
// container and reason why a container waits on the user (an image not pulled): the
// log would otherwise stay silent.
func (l *Logs) followReplica(ctx context.Context, replica string) error {
	typ, index, _ := strings.Cut(replica, "-")
	_, name := SplitRef(l.Name)
	podName := fmt.Sprintf("%s-%s-%s", name, typ, index)
	said := map[tfjob.Wait]bool{}
	for {
		pod := &corev1.Pod{}
		err := l.Clients.Client.Get(ctx, client.ObjectKey{Namespace: l.Clients.Namespace, Name: podName}, pod)
		if err == nil {
			for _, w := range Unsaid(said, tfjob.WaitsOnUser(pod)) {
				fmt.Fprintf(l.ErrOut, "%s: container %s is waiting: %s\n", replica, w.Container, w)
			}
		}
		if err == nil && hasLogs(pod) {
			liveErr := l.streamPod(ctx, pod, true, false)
			if liveErr == nil {
				return nil
			}
			if err := l.streamS3(ctx, replica); err != nil {
				return errors.Join(liveErr, err)
			}
			fmt.Fprintf(l.ErrOut, "%s: no live log (%v): printed the copy in S3\n", replica, liveErr)
			return nil
		}
		job, err := Get(ctx, l.Clients.Client, l.Clients.Namespace, l.Name)
		if apierrors.IsNotFound(err) || (err == nil && (ConditionTrue(job, tfv1.JobSucceeded) || ConditionTrue(job, tfv1.JobFailed))) {
			if err := l.streamS3(ctx, replica); err != nil && !errors.Is(err, storage.ErrNotFound) {
				return err
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(PollInterval):
		}
	}
}

// wanted filters replica names by the REPLICA argument, sorted and deduplicated.
func (l *Logs) wanted(replicas []string) []string {
	replicas = slices.DeleteFunc(replicas, func(r string) bool { return l.Replica != "" && r != l.Replica })
	slices.SortFunc(replicas, CompareReplicas)
	return slices.Compact(replicas)
}

// streamPod copies the log of a pod's main container from Kubernetes: of its
// previous run with previous, as kubectl logs --previous.
func (l *Logs) streamPod(ctx context.Context, pod *corev1.Pod, follow, previous bool) error {
	c := tfjob.TensorFlowContainer(pod.Spec.Containers)
	if c == nil {
		return fmt.Errorf("pod %s has no container", pod.Name)
	}
	opts := &corev1.PodLogOptions{Container: c.Name, Follow: follow, Previous: previous}
	stream, err := l.Clients.Kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, opts).Stream(ctx)
	if err != nil {
		return fmt.Errorf("reading the log of pod %s: %w", pod.Name, err)
	}
	defer stream.Close()
	return l.Out.copyLines(ReplicaName(pod), stream)
}

// streamS3 copies the chosen attempt's log of a replica from S3.
func (l *Logs) streamS3(ctx context.Context, replica string) error {
	stored, c, err := l.s3Logs(ctx)
	if err == nil && stored[replica] == nil {
		// Listed before this replica's pod ended: its agent has stored the log since,
		// as it does before its container exits.
		stored, c, err = l.relistS3(ctx)
	}
	if err != nil {
		return err
	}
	u, err := stored[replica].pick(replica, l.Which)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := c.Download(ctx, u, pw)
		pw.CloseWithError(err)
	}()
	err = l.Out.copyLines(replica, pr)
	pr.Close()
	return err
}

// s3Logs finds, once, the logs the agent backed up for the job (see indexLogs). A job
// that is gone is looked for under the default destination, s3://<bucket>/runs.
func (l *Logs) s3Logs(ctx context.Context) (map[string]*storedLogs, *storage.Client, error) {
	l.s3Mu.Lock()
	defer l.s3Mu.Unlock()
	if !l.s3Listed {
		l.s3Listed = true
		l.listS3(ctx)
	}
	return l.stored, l.s3, l.s3Error
}

// relistS3 lists the job's stored logs again, for a replica whose pod ended after
// the first listing.
func (l *Logs) relistS3(ctx context.Context) (map[string]*storedLogs, *storage.Client, error) {
	l.s3Mu.Lock()
	l.s3Listed = false
	l.s3Mu.Unlock()
	return l.s3Logs(ctx)
}

// listS3 lists the job's stored logs, finding where they are stored the first time.
func (l *Logs) listS3(ctx context.Context) {
	l.stored, l.s3Error = map[string]*storedLogs{}, nil
	if l.s3 == nil {
		_, base, c, err := l.Storage.JobFiles(ctx, l.Clients, l.Name)
		if err != nil {
			l.s3Error = err
			return
		}
		l.s3, l.s3Base = c, base
	}
	objs, err := l.s3.List(ctx, l.s3Base)
	if err != nil {
		l.s3Error = fmt.Errorf("looking for logs in S3: %w", err)
		return
	}
	l.stored = indexLogs(l.s3Base, objs)
}

// noLogs explains why there is nothing to print.
func (l *Logs) noLogs(jobErr, s3Err error) error {
	switch {
	case jobErr != nil && s3Err != nil:
		return errors.Join(jobErr, s3Err)
	case jobErr != nil:
		return fmt.Errorf("%w, and S3 has no logs of it", jobErr)
	case l.Replica != "":
		return fmt.Errorf("no logs of replica %s of tfjob %s: no such pod has started, and S3 has none", l.Replica, l.Name)
	case s3Err != nil:
		return fmt.Errorf("no logs of tfjob %s yet: no pod has started (%v)", l.Name, s3Err)
	}
	return fmt.Errorf("no logs of tfjob %s yet: no pod has started, and S3 has none", l.Name)
}

// Replicas names every replica of a job, as "<type>-<index>"; none for nil.
func Replicas(job *tfv1.TFJob) []string {
	if job == nil {
		return nil
	}
	var replicas []string
	for _, rt := range tfv1.ReplicaTypes {
		for i := range tfjob.Replicas(job.Spec.TFReplicaSpecs[rt]) {
			replicas = append(replicas, tfjob.ReplicaName(rt, i))
		}
	}
	return replicas
}

// hasLogs reports whether Kubernetes may have logs of a pod: it was scheduled and has
// left Pending.
func hasLogs(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodPending && pod.Status.Phase != ""
}

// LineWriter writes whole lines from several replicas, each prefixed "[replica] ", or
// with JSON each as one object, LogLine, a line.
type LineWriter struct {
	mu   sync.Mutex
	W    io.Writer
	JSON bool
}

// LogLine is a line of a replica's log as tfk8s logs -o json prints it.
type LogLine struct {
	Replica string `json:"replica"`
	Text    string `json:"text"`
}

// writeLine writes one line of replica's log.
func (lw *LineWriter) writeLine(replica string, line []byte) error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if !lw.JSON {
		_, err := fmt.Fprintf(lw.W, "[%s] %s\n", replica, line)
		return err
	}
	out, err := json.Marshal(LogLine{Replica: replica, Text: string(line)})
	if err != nil {
		return err
	}
	_, err = lw.W.Write(append(out, '\n'))
	return err
}

// copyLines copies r line by line. A line longer than logline.Max is written in
// pieces, each but the last ending with logline.Mark, so that one line without a
// newline (300 MB of it) holds no more memory than one piece.
func (lw *LineWriter) copyLines(replica string, r io.Reader) error {
	lr := logline.NewReader(r, logline.Max)
	for {
		line, cut, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if cut {
			line = append(line[:len(line):len(line)], logline.Mark...) // a copy: line is the reader's
		}
		if err := lw.writeLine(replica, line); err != nil {
			return err
		}
	}
}
