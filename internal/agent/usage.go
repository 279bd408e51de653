package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/tfk8s/tfk8s/internal/nvml"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// usageInterval is the time between two samples of the cgroup: often enough that a
// short job has a few, rarely enough to cost nothing measurable.
const usageInterval = 2 * time.Second

// usageRecorder samples the container's cgroup while the command runs and keeps the
// replica's usage record, which the uploader stores at every upload.
type usageRecorder struct {
	cg  *cgroupReader
	dst storage.URI
	now func() time.Time
	// interval is the least time between two samples but the final one: a CPU rate
	// is taken over at least that long (usageInterval).
	interval time.Duration

	mu       sync.Mutex // guards what follows
	rec      storage.Usage
	last     cpuReading // the latest sample's
	before   cpuReading // the one before it
	first    cpuReading // the first sample's, for the mean
	memSum   float64
	points   []storage.UsagePoint
	stride   int // keep every stride-th sample in points
	skipped  int
	stored   []byte
	warned   bool
	gpus     gpuSource // nil until run starts it, and where there is no GPU to read
	gpuTally gpuTally
	ended    bool // the final sample is taken: the command and its leftovers have ended
}

// cpuReading is a sample's CPU count and its time stamp, as now returned it: with
// Go's monotonic reading, so that a step of the node's clock neither stalls nor
// hastens sampling, nor shows in a rate. The record holds the wall time alone, in UTC.
type cpuReading struct {
	seconds float64
	at      time.Time
}

// gpuSource hands out each reading of the container's GPUs once (nvml.Sampler).
type gpuSource interface {
	Next() nvml.Sample
}

// newUsageRecorder returns nil, having logged why, where the cgroup cannot be read:
// the command runs as well without the record.
func newUsageRecorder(replica storage.URI, log *logger) *usageRecorder {
	cg, err := findCgroup("/proc/self/cgroup", "/sys/fs/cgroup")
	if err != nil {
		log.Printf("no usage record: %v", err)
		return nil
	}
	return &usageRecorder{cg: cg, dst: replica.Join(storage.UsageName), now: time.Now, interval: usageInterval, stride: 1,
		rec: storage.Usage{Source: cg.source()}}
}

// startGPUs starts reading the GPUs at every sample where tfk8s-nvml (cmd) is
// installed, started with start. The returned stop ends the reader: the command's
// exit ends it, while the cgroup is sampled on until what the command left has ended
// too. A reading it had not handed out is counted by the next sample, once.
func (r *usageRecorder) startGPUs(cmd string, start nvml.Starter, log *logger) (stop func()) {
	if r == nil {
		return func() {}
	}
	s, stop := startGPUSampler(start, cmd, r.interval, log)
	if s != nil {
		r.mu.Lock()
		r.gpus = s
		r.mu.Unlock()
	}
	return stop
}

// run samples every interval until stop closes. An upload may take a sample that is
// due first (sampleDue): the next is then an interval after it. The final sample is
// sampleFinal's, once what the command left running has ended too: none comes after.
func (r *usageRecorder) run(stop <-chan struct{}, log *logger) {
	if r == nil {
		return
	}
	next := time.NewTimer(0)
	defer next.Stop()
	for {
		select {
		case <-stop:
			return
		case <-next.C:
			next.Reset(r.sampleDue(log))
		}
	}
}

// sampleDue takes a sample if the last one is at least an interval old, and returns
// how long until the next is due. Both run and every upload ask: two samples a
// moment apart would take a CPU rate over that moment, where any delay of a stamp
// shows cores the container never had.
func (r *usageRecorder) sampleDue(log *logger) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return r.interval
	}
	if r.rec.Samples > 0 {
		if wait := r.interval - r.now().Sub(r.last.at); wait > 0 {
			return wait
		}
	}
	r.sample(log)
	return r.interval
}

// sampleFinal takes the last sample, however soon after the one before, once: the
// command and what it left running have ended, and the record ends with what they
// used to the end, their OOM kills too.
func (r *usageRecorder) sampleFinal(log *logger) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ended {
		r.sample(log)
		r.ended = true
	}
}

// sample reads the cgroup once and adds the reading to the record. The caller holds
// mu across the read and its time stamp, so that samples are stamped in the order
// they were read.
func (r *usageRecorder) sample(log *logger) {
	s, err := r.cg.read()
	if err != nil {
		if !r.warned {
			r.warned = true
			log.Printf("sampling the container's cgroup: %v", err)
		}
		return
	}
	r.add(s, r.now())
	if r.gpus != nil {
		smp := r.gpus.Next()
		r.gpuTally.add(&r.rec, smp.GPUs)
		r.gpuTally.warn(smp.Unreadable, log)
	}
}

// add adds sample s, taken at t, to the record. The caller holds mu.
func (r *usageRecorder) add(s cgroupSample, t time.Time) {
	u, wall := &r.rec, t.UTC()
	u.Updated = wall
	u.CPUSeconds = s.cpuSeconds
	u.MemoryPeakBytes = max(u.MemoryPeakBytes, s.workingSet)
	u.MemoryHighWaterBytes = max(u.MemoryHighWaterBytes, s.highWater)
	u.MemoryLimitBytes, u.OOMKills = s.limit, s.oomKills
	if u.Samples == 0 {
		u.Start, r.first = wall, cpuReading{s.cpuSeconds, t}
	}
	if span := t.Sub(r.first.at).Seconds(); span > 0 {
		u.CPUCoresMean = (s.cpuSeconds - r.first.seconds) / span
	}
	// A rate is taken over an interval at least: the final sample, which may come a
	// moment after the one before, takes it from the sample before that, and has none
	// where there is no such sample (a command that exited right after the first):
	// the mean covers it.
	from, rated := r.last, u.Samples > 0
	if t.Sub(r.last.at) < r.interval {
		from, rated = r.before, u.Samples > 1
	}
	var cores float64
	if dt := t.Sub(from.at).Seconds(); rated && dt > 0 {
		cores = max(0, s.cpuSeconds-from.seconds) / dt
		u.CPUCoresPeak = max(u.CPUCoresPeak, cores)
	}
	u.Samples++
	r.memSum += float64(s.workingSet)
	u.MemoryMeanBytes = int64(r.memSum / float64(u.Samples))
	r.before, r.last = r.last, cpuReading{s.cpuSeconds, t}
	r.keep(storage.UsagePoint{Time: wall, CPUCores: cores, MemoryBytes: s.workingSet})
}

// keep adds p to the series, which holds at most twice MaxUsagePoints: when full, every
// other point goes and only every stride-th sample is kept from then on, so that the
// series stays even over the whole run however long it is.
func (r *usageRecorder) keep(p storage.UsagePoint) {
	if r.skipped++; r.skipped < r.stride {
		return
	}
	r.skipped = 0
	r.points = append(r.points, p)
	if len(r.points) >= 2*storage.MaxUsagePoints {
		half := r.points[:0]
		for i := 0; i < len(r.points); i += 2 {
			half = append(half, r.points[i])
		}
		r.points, r.stride = half, 2*r.stride
	}
}

// record returns the record of attempt n, its series thinned to MaxUsagePoints; nil
// before the first sample.
func (r *usageRecorder) record(attempt int) *storage.Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rec.Samples == 0 {
		return nil
	}
	u := r.rec
	u.Attempt = attempt
	u.Series = thinUsage(r.points, storage.MaxUsagePoints)
	u.GPUs = slices.Clone(r.rec.GPUs)
	return &u
}

// thinUsage picks at most n evenly spaced points, the last always among them.
func thinUsage(points []storage.UsagePoint, n int) []storage.UsagePoint {
	if len(points) <= n {
		return append([]storage.UsagePoint(nil), points...)
	}
	out := make([]storage.UsagePoint, n)
	for i := range out {
		out[i] = points[(i+1)*len(points)/n-1]
	}
	return out
}

// store takes a sample if one is due and uploads the record of attempt n if it
// changed.
func (r *usageRecorder) store(ctx context.Context, c *storage.Client, attempt int, log *logger) error {
	if r == nil {
		return nil
	}
	r.sampleDue(log)
	u := r.record(attempt)
	if u == nil {
		return nil
	}
	b, err := json.Marshal(u)
	if err != nil {
		return err
	}
	r.mu.Lock()
	same := bytes.Equal(b, r.stored)
	r.mu.Unlock()
	if same {
		return nil
	}
	if err := c.PutObject(ctx, r.dst, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("writing the usage record: %w", err)
	}
	r.mu.Lock()
	r.stored = b
	r.mu.Unlock()
	return nil
}

// terminationLog is where the kubelet reads a container's termination message, which
// the controller puts in the job's failure (the pod's default path).
var terminationLog = "/dev/termination-log"

// logOOM says, once the final sample is taken, that the kernel killed processes of the
// container for its memory limit, with the figures a user needs to raise it: in the
// log, and as the container's termination message, so that the job's Failed
// condition and describe name the replica, its peak and its limit.
func (r *usageRecorder) logOOM(replica string, log *logger) {
	if r == nil {
		return
	}
	msg := r.record(0).OOMMessage(replica)
	if msg == "" {
		return
	}
	log.Printf("%s", msg)
	// The kubelet creates the file; where it does not (not in a pod), nothing is written.
	f, err := os.OpenFile(terminationLog, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.WriteString(msg + "\n"); err != nil {
		log.Printf("writing the termination message: %v", err)
	}
}
