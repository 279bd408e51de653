package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// A running job's progress is polled from its lead replica's agent at most every
// progressInterval: at 1,000 running jobs, some 2,000 status writes a minute, the
// figure test/bench measures. A poll waits at most progressTimeout, on one of
// progressPollers goroutines and never on a reconcile worker: a pod that does not
// answer (a default-deny NetworkPolicy drops the packets) must not hold the queue.
// A job whose poll failed backs off, doubling from progressInterval up to
// maxProgressBackoff.
const (
	progressInterval   = 30 * time.Second
	progressTimeout    = time.Second
	maxProgressBackoff = 10 * time.Minute
	// progressPollers polls at once, and progressQueue polls wait; a job that finds
	// the queue full is polled at its next turn. At 1,000 jobs every 30 s the pollers
	// keep up while under a tenth of the polls time out.
	progressPollers = 4
	progressQueue   = 256
	// maxProgressStep bounds what is believed of a step or a total: the largest
	// integer a float64 holds exactly, and JavaScript's.
	maxProgressStep = 1 << 53
	// maxStepRate bounds the steps per second believed, and a rate under
	// minStepRate (a step in some 30 years) counts as none: written as a decimal
	// without an exponent, with four significant digits, a rate is then at most 14
	// characters.
	maxStepRate = 1e9
	minStepRate = 1e-9
)

// progressView is what observe reads of a job's polled progress: the last answer,
// kept until the next replaces it (nil before the first), and how long until the job
// is due for its next poll, 0 when due now.
type progressView struct {
	last *tfjob.LiveProgress
	wait time.Duration
}

// progressPlan is what decide asks of the poller: forget a finished job, or queue
// the poll of a running job that is due; wait is when it is due otherwise.
type progressPlan struct {
	forget bool
	poll   *pollRequest
	wait   time.Duration
}

// planProgress puts the job's last polled progress into st and decides its next
// poll; a finished job keeps its last progress without a rate or an ETA.
func (r *TFJobReconciler) planProgress(job *tfv1.TFJob, pods []*corev1.Pod, st *tfv1.TFJobStatus, v progressView, now metav1.Time) progressPlan {
	if r.kubeflow {
		return progressPlan{} // kubeflow.org's status has no field for it
	}
	if jobFinished(st) {
		st.Progress = finishedProgress(st.Progress)
		return progressPlan{forget: true}
	}
	pod, url := progressSource(job, pods)
	if pod == nil {
		return progressPlan{} // the lead pod's update brings the next reconcile
	}
	st.Progress = decideProgress(st.Progress, v.last, now)
	if v.wait > 0 {
		return progressPlan{wait: v.wait}
	}
	return progressPlan{poll: &pollRequest{url: url, podUID: string(pod.UID), pod: pod.Name,
		job: types.NamespacedName{Namespace: job.Namespace, Name: job.Name}}}
}

// syncProgress carries out the progress plan: it queues the job's poll, whose answer
// comes back through the reconciler's progress events, and never waits on the network.
// It returns when the job is due again, or 0.
func (r *TFJobReconciler) syncProgress(ctx context.Context, job *tfv1.TFJob, p progressPlan, now metav1.Time) time.Duration {
	switch {
	case p.forget:
		r.progressPoller().forget(job.UID)
	case p.poll != nil:
		req := *p.poll
		req.notify = r.progressNotify
		return r.progressPoller().ask(ctx, job.UID, req, now.Time)
	}
	return p.wait
}

// progressSource is the lead replica's running pod that serves its progress, and the
// URL to poll; nil when there is none. A pod is polled only when the job asks its
// lead to serve (tfjob.ServesProgress), it is not on the host's network, and its
// container's port is the controller's own: a pod created before the controller set
// it is not polled, nor is a port the user's environment chose.
func progressSource(job *tfv1.TFJob, pods []*corev1.Pod) (*corev1.Pod, string) {
	lead, ok := tfjob.LeadReplica(job)
	if !ok || !tfjob.ServesProgress(job, lead, 0) {
		return nil, ""
	}
	for _, pod := range pods {
		key, ok := podKey(pod)
		if !ok || key != (ReplicaKey{Type: lead, Index: 0}) || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil ||
			pod.Status.PodIP == "" || pod.Spec.HostNetwork {
			continue
		}
		for _, c := range pod.Spec.Containers {
			for _, e := range slices.Backward(c.Env) { // the last of a name is the one the container sees
				if e.Name == tfjob.EnvProgressPort {
					if e.Value != strconv.Itoa(tfjob.ProgressPort) {
						break
					}
					return pod, "http://" + net.JoinHostPort(pod.Status.PodIP, e.Value) + tfjob.ProgressPath
				}
			}
		}
	}
	return nil, ""
}

// progressClient polls the agents: no proxy (pod IPs are reached directly), no
// redirect followed, no connection kept (a poll every 30 s would hold one open per
// running job).
var progressClient = &http.Client{
	Timeout:       progressTimeout,
	Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true, ResponseHeaderTimeout: progressTimeout},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// fetchLiveProgress reads the agent's progress at url, with the pod's UID as the bearer
// token; nil when it has none yet. The body is the program's to shape: at most
// tfjob.MaxLiveProgressBytes are read, and decideProgress checks every field.
func fetchLiveProgress(ctx context.Context, c *http.Client, url, podUID string) (*tfjob.LiveProgress, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+podUID)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil, nil
	case http.StatusOK:
	default:
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, tfjob.MaxLiveProgressBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if len(b) > tfjob.MaxLiveProgressBytes {
		return nil, fmt.Errorf("GET %s: body over %d bytes", url, tfjob.MaxLiveProgressBytes)
	}
	lp := &tfjob.LiveProgress{}
	if err := json.Unmarshal(b, lp); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return lp, nil
}

// decideProgress is the job's progress once lp was read at now, from prev: prev itself
// when lp is nil or says nothing new, so that the status is written only on a change.
// What lp says is checked and clamped: it comes from the user's program.
func decideProgress(prev *tfv1.TrainingProgress, lp *tfjob.LiveProgress, now metav1.Time) *tfv1.TrainingProgress {
	if lp == nil {
		return prev
	}
	p := &tfv1.TrainingProgress{Step: min(max(lp.Step, 0), maxProgressStep), Metrics: progressMetrics(lp.Metrics)}
	rate := lp.StepsPerSecond
	if math.IsNaN(rate) || rate < minStepRate {
		rate = 0
	}
	rate = min(rate, maxStepRate)
	if rate > 0 {
		p.StepsPerSecond = formatStepRate(rate)
	}
	if total := lp.TotalSteps; total >= 1 && total <= maxProgressStep {
		p.TotalSteps = ptr.To(total)
		p.ProgressPercentage = ptr.To(int32(min(p.Step, total) * 100 / total))
		if rate > 0 {
			left := float64(max(total-p.Step, 0)) / rate
			p.EstimatedRemainingSeconds = ptr.To(int32(min(math.Ceil(left), math.MaxInt32)))
		}
	}
	if prev != nil {
		p.LastUpdatedTime = prev.LastUpdatedTime
		if equality.Semantic.DeepEqual(prev, p) {
			return prev
		}
	}
	p.LastUpdatedTime = now
	return p
}

// formatStepRate writes rate, from minStepRate to maxStepRate, as the API says: a
// decimal without an exponent ("12.5", "0.000001235", "12350"), to four significant
// digits.
func formatStepRate(rate float64) string {
	rounded, _ := strconv.ParseFloat(strconv.FormatFloat(rate, 'g', 4, 64), 64)
	return strconv.FormatFloat(rounded, 'f', -1, 64)
}

// progressMetrics keeps the first tfjob.MaxLiveMetrics metrics whose name is short and
// printable and whose value is a number, rendered again with six significant digits.
func progressMetrics(in []tfjob.LiveMetric) []tfv1.ProgressMetric {
	var out []tfv1.ProgressMetric
	for _, m := range in {
		if len(out) == tfjob.MaxLiveMetrics {
			break
		}
		v, err := strconv.ParseFloat(m.Value, 64)
		if err != nil || !tfjob.MetricNameFits(m.Name) {
			continue
		}
		out = append(out, tfv1.ProgressMetric{Name: m.Name, Value: strconv.FormatFloat(v, 'g', 6, 64)})
	}
	return out
}

// finishedProgress is a finished job's last progress: no rate nor time left, as
// nothing runs any more.
func finishedProgress(p *tfv1.TrainingProgress) *tfv1.TrainingProgress {
	if p == nil || (p.StepsPerSecond == "" && p.EstimatedRemainingSeconds == nil) {
		return p
	}
	p = p.DeepCopy()
	p.StepsPerSecond, p.EstimatedRemainingSeconds = "", nil
	return p
}

// progressPolls polls the running jobs' lead replicas for every reconciler.
var progressPolls = newProgressPoller(progressClient, progressPollers, progressQueue)

// progressPoller is the poller of the reconciler: its own when a test gave it one.
func (r *TFJobReconciler) progressPoller() *progressPoller {
	if r.polls != nil {
		return r.polls
	}
	return progressPolls
}

// progressPoller polls on a fixed number of goroutines, fed by a bounded queue, and
// keeps each job's last result until the next one replaces it. Entries of jobs gone
// without finishing are swept once they are stale.
type progressPoller struct {
	client  *http.Client
	workers int
	queue   chan pollRequest
	start   sync.Once

	mu    sync.Mutex
	jobs  map[types.UID]*jobPoll
	swept time.Time
}

// pollRequest is one poll of a job's lead replica.
type pollRequest struct {
	uid         types.UID
	url, podUID string
	pod         string // the pod's name, for the log
	log         logr.Logger
	// job names the job whose reconcile notify calls for once the answer is kept.
	job    types.NamespacedName
	notify func(types.NamespacedName)
}

// jobPoll is what the poller knows of a job.
type jobPoll struct {
	last     time.Time // when the reconcile last asked for a poll
	failures int       // polls failed in a row
	inFlight bool
	result   *tfjob.LiveProgress // the last poll's answer, until the next replaces it
}

func newProgressPoller(c *http.Client, workers, queue int) *progressPoller {
	return &progressPoller{client: c, workers: workers, queue: make(chan pollRequest, queue), jobs: map[types.UID]*jobPoll{}}
}

// progressBackoff is the wait before the next poll after failures failed polls in a
// row: progressInterval, doubled by each failure up to maxProgressBackoff.
func progressBackoff(failures int) time.Duration {
	d := progressInterval
	for range min(failures, 16) {
		d = min(2*d, maxProgressBackoff)
	}
	return d
}

// peek returns the job's last polled progress (nil before its first answer), kept
// until the next answer replaces it, and how long until the job is due again, 0 when
// due now. It changes nothing.
func (p *progressPoller) peek(uid types.UID, now time.Time) progressView {
	p.mu.Lock()
	defer p.mu.Unlock()
	jp := p.jobs[uid]
	if jp == nil {
		return progressView{}
	}
	// Kept, not handed out once: a status write deferred during a creation burst
	// writes the same reading at the next reconcile (decideProgress returns the
	// status's block unchanged when the reading is the one already written).
	v := progressView{last: jp.result}
	backoff := progressBackoff(jp.failures)
	if wait := jp.last.Add(backoff).Sub(now); wait > 0 && wait <= backoff {
		v.wait = wait
	}
	return v
}

// ask queues a poll of the job, due now, unless one is under way, without waiting; a
// full queue skips this turn. It returns when the job is due again: the answer itself
// comes through req.notify.
func (p *progressPoller) ask(ctx context.Context, uid types.UID, req pollRequest, now time.Time) time.Duration {
	p.start.Do(func() {
		for range p.workers {
			go p.run()
		}
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	jp := p.jobs[uid]
	if jp == nil {
		jp = &jobPoll{}
		p.jobs[uid] = jp
	}
	jp.last = now // the clock going back polls rather than waits for ever
	if !jp.inFlight {
		req.uid, req.log = uid, log.FromContext(ctx)
		select {
		case p.queue <- req:
			jp.inFlight = true
		default:
		}
	}
	p.sweep(now)
	return progressBackoff(jp.failures)
}

// sweep drops the jobs not asked about for long; the caller holds p.mu.
func (p *progressPoller) sweep(now time.Time) {
	if now.Sub(p.swept) <= 10*progressInterval {
		return
	}
	for id, jp := range p.jobs {
		if !jp.inFlight && now.Sub(jp.last) > 2*maxProgressBackoff {
			delete(p.jobs, id)
		}
	}
	p.swept = now
}

// run polls what is queued, for ever.
func (p *progressPoller) run() {
	for req := range p.queue {
		ctx, cancel := context.WithTimeout(context.Background(), progressTimeout)
		lp, err := fetchLiveProgress(ctx, p.client, req.url, req.podUID)
		cancel()
		if err != nil {
			req.log.V(2).Info("Reading the lead replica's progress", "pod", req.pod, "error", err.Error())
		}
		if p.done(req.uid, lp, err) && req.notify != nil {
			req.notify(req.job)
		}
	}
}

// done records a poll's outcome, and reports whether it brought a new answer for the
// job's status: a reading other than the one kept. An unchanged reading queues no
// reconcile, so that a job whose training stalls costs none per poll.
func (p *progressPoller) done(uid types.UID, lp *tfjob.LiveProgress, err error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	jp := p.jobs[uid]
	if jp == nil {
		return false // forgotten meanwhile
	}
	jp.inFlight = false
	if err != nil {
		jp.failures++
		return false
	}
	changed := lp != nil && !reflect.DeepEqual(lp, jp.result)
	jp.failures, jp.result = 0, lp
	return changed
}

// forget drops a finished job.
func (p *progressPoller) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.jobs, uid)
}
