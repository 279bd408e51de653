package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

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
// figure test/bench measures. A poll waits at most progressTimeout: it runs inside a
// reconcile, and a pod that does not answer must not hold a worker for long.
const (
	progressInterval = 30 * time.Second
	progressTimeout  = time.Second
	// maxProgressStep bounds what is believed of a step or a total: the largest
	// integer a float64 holds exactly, and JavaScript's.
	maxProgressStep = 1 << 53
	// maxStepRate bounds the steps per second believed.
	maxStepRate = 1e9
)

// syncProgress polls the lead replica's progress of a running job when it is due and
// puts it into st; a finished job keeps its last progress without a rate or an ETA.
// It returns when to poll again, or 0. It is the one hook of progress in reconcile,
// between deciding the end record and writing the status.
func (r *TFJobReconciler) syncProgress(ctx context.Context, job *tfv1.TFJob, pods []*corev1.Pod, st *tfv1.TFJobStatus, now metav1.Time) time.Duration {
	if r.kubeflow {
		return 0 // kubeflow.org's status has no field for it
	}
	if jobFinished(st) {
		progressPolls.forget(job.UID)
		st.Progress = finishedProgress(st.Progress)
		return 0
	}
	pod, url := progressSource(job, pods)
	if pod == nil {
		return 0 // the lead pod's update brings the next reconcile
	}
	if wait := progressPolls.due(job.UID, now.Time); wait > 0 {
		return wait
	}
	lp, err := fetchLiveProgress(ctx, progressClient, url, string(pod.UID))
	if err != nil {
		log.FromContext(ctx).V(2).Info("Reading the lead replica's progress", "pod", pod.Name, "error", err.Error())
	}
	st.Progress = decideProgress(st.Progress, lp, now)
	return progressInterval
}

// progressSource is the lead replica's running pod that serves its progress, and the
// URL to poll; nil when there is none. The port is the pod's own setting, so a pod
// created before the controller asked for it is not polled.
func progressSource(job *tfv1.TFJob, pods []*corev1.Pod) (*corev1.Pod, string) {
	lead, ok := tfjob.LeadReplica(job)
	if !ok {
		return nil, ""
	}
	for _, pod := range pods {
		key, ok := podKey(pod)
		if !ok || key != (ReplicaKey{Type: lead, Index: 0}) || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil ||
			pod.Status.PodIP == "" || pod.Spec.HostNetwork {
			continue
		}
		for _, c := range pod.Spec.Containers {
			for _, e := range c.Env {
				if port, err := strconv.Atoi(e.Value); e.Name == tfjob.EnvProgressPort && err == nil && port > 0 && port < 65536 {
					return pod, "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)) + tfjob.ProgressPath
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
	if math.IsNaN(rate) || rate <= 0 {
		rate = 0
	}
	rate = min(rate, maxStepRate)
	if rate > 0 {
		p.StepsPerSecond = strconv.FormatFloat(rate, 'g', 4, 64)
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

// progressMetrics keeps the first tfjob.MaxLiveMetrics metrics whose name is short and
// printable and whose value is a number, rendered again with six significant digits.
func progressMetrics(in []tfjob.LiveMetric) []tfv1.ProgressMetric {
	var out []tfv1.ProgressMetric
	for _, m := range in {
		if len(out) == tfjob.MaxLiveMetrics {
			break
		}
		v, err := strconv.ParseFloat(m.Value, 64)
		if err != nil || !printableName(m.Name) {
			continue
		}
		out = append(out, tfv1.ProgressMetric{Name: m.Name, Value: strconv.FormatFloat(v, 'g', 6, 64)})
	}
	return out
}

// printableName reports whether a metric's name fits the status: 1 to 128 bytes of
// UTF-8 without control characters.
func printableName(s string) bool {
	if s == "" || len(s) > 128 || !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return false
		}
	}
	return true
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

// progressPolls remembers when each running job was last polled, so that a reconcile
// for another reason does not poll again within progressInterval. Entries of jobs
// gone without finishing are swept once they are stale.
var progressPolls = &pollTimes{}

type pollTimes struct {
	mu    sync.Mutex
	last  map[types.UID]time.Time
	swept time.Time
}

// due returns how long until the job may be polled, or 0, and then counts it polled
// at now.
func (p *pollTimes) due(uid types.UID, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[types.UID]time.Time{}
	}
	if wait := p.last[uid].Add(progressInterval).Sub(now); wait > 0 && wait <= progressInterval {
		return wait
	}
	p.last[uid] = now
	if now.Sub(p.swept) > 10*progressInterval {
		for id, t := range p.last {
			if now.Sub(t) > 4*progressInterval {
				delete(p.last, id)
			}
		}
		p.swept = now
	}
	return 0
}

// forget drops a finished job.
func (p *pollTimes) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, uid)
}
