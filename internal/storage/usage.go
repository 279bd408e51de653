package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Usage is what a replica's container used, as its agent sampled the container's
// cgroup while the command ran: the figures of its latest attempt (a restarted
// container starts a new cgroup, and its counters with it).
type Usage struct {
	// Attempt is the attempt sampled.
	Attempt int `json:"attempt"`
	// Source names the cgroup version read: "cgroup v1" or "cgroup v2".
	Source string `json:"source"`
	// Start and Updated are the first and the latest sample's times.
	Start   time.Time `json:"start"`
	Updated time.Time `json:"updated"`
	// Samples counts them.
	Samples int `json:"samples"`
	// CPUSeconds is the CPU time the container used, all its processes together.
	CPUSeconds float64 `json:"cpuSeconds"`
	// CPUCoresMean is CPUSeconds per second between the first and latest sample;
	// CPUCoresPeak the most between two samples.
	CPUCoresMean float64 `json:"cpuCoresMean"`
	CPUCoresPeak float64 `json:"cpuCoresPeak"`
	// MemoryMeanBytes and MemoryPeakBytes are of the working set sampled: memory
	// in use less the page cache the kernel may reclaim (inactive files), as the
	// kubelet counts it against the limit.
	MemoryMeanBytes int64 `json:"memoryMeanBytes"`
	MemoryPeakBytes int64 `json:"memoryPeakBytes"`
	// MemoryHighWaterBytes is the kernel's own peak of the memory charged, page cache
	// included, between samples too; 0 where the kernel does not keep it.
	MemoryHighWaterBytes int64 `json:"memoryHighWaterBytes,omitempty"`
	// MemoryLimitBytes is the container's limit; 0 when it has none.
	MemoryLimitBytes int64 `json:"memoryLimitBytes,omitempty"`
	// OOMKills counts the processes the kernel killed for the limit.
	OOMKills int `json:"oomKills"`
	// GPUs is each NVIDIA GPU the container saw, read through NVML; none where it saw
	// none or NVML could not be loaded.
	GPUs []GPUUsage `json:"gpus,omitempty"`
	// Series is the samples, evenly thinned out to at most MaxUsagePoints.
	Series []UsagePoint `json:"series,omitempty"`
}

// GPUUsage is what one GPU of a container was used for over the samples that read it.
type GPUUsage struct {
	// Index is NVML's index of the GPU in the container, 0 to n-1.
	Index int `json:"index"`
	// Samples counts the readings of it.
	Samples int `json:"samples"`
	// UtilizationMeanPercent and UtilizationPeakPercent are of the share of time a
	// kernel ran on the GPU, as NVML measures it.
	UtilizationMeanPercent float64 `json:"utilizationMeanPercent"`
	UtilizationPeakPercent int     `json:"utilizationPeakPercent"`
	// MemoryPeakBytes is the most of its memory in use; MemoryTotalBytes all of it.
	MemoryPeakBytes  int64 `json:"memoryPeakBytes"`
	MemoryTotalBytes int64 `json:"memoryTotalBytes"`
}

// GPUSummary is a record's GPUs in a few words, as tfk8s top and runs show print
// them: the mean and peak utilisation over all its GPUs, and the peak memory of the
// fullest against its total, "35% (peak 80%) 3.1 GiB/16 GiB"; "" where it has none.
func (u *Usage) GPUSummary() string {
	gpus := u.ReadGPUs()
	if len(gpus) == 0 {
		return ""
	}
	var mean float64
	peak, fullest := 0, gpus[0]
	for _, g := range gpus {
		mean += g.UtilizationMeanPercent / float64(len(gpus))
		peak = max(peak, g.UtilizationPeakPercent)
		if g.MemoryPeakBytes > fullest.MemoryPeakBytes {
			fullest = g
		}
	}
	s := fmt.Sprintf("%.0f%% (peak %d%%) %s/%s", mean, peak, FormatBytes(fullest.MemoryPeakBytes), FormatBytes(fullest.MemoryTotalBytes))
	if len(gpus) > 1 {
		s = fmt.Sprintf("%d GPUs %s", len(gpus), s)
	}
	return s
}

// ReadGPUs are the record's GPUs that NVML read at least once: one it would not read
// (a MIG-enabled GPU has no utilisation) keeps its index with no sample, and no
// figure of it is a measurement.
func (u *Usage) ReadGPUs() []GPUUsage {
	if u == nil {
		return nil
	}
	var out []GPUUsage
	for _, g := range u.GPUs {
		if g.Samples > 0 {
			out = append(out, g)
		}
	}
	return out
}

// MaxUsagePoints bounds a usage record's series, as MaxPoints bounds progress's.
const MaxUsagePoints = 240

// UsagePoint is one sample: the cores used since the one before, and the working set.
type UsagePoint struct {
	Time        time.Time `json:"time"`
	CPUCores    float64   `json:"cpuCores"`
	MemoryBytes int64     `json:"memoryBytes"`
}

// OOMMessage names the replica whose record this is, its OOM kills, its limit and
// its peaks; "" when the kernel killed nothing. A process killed in a moment of
// allocating is rarely sampled at its peak: the kernel's high-water mark of the memory
// charged is the figure to set the limit by, the working set's peak beside it.
func (u *Usage) OOMMessage(replica string) string {
	if u == nil || u.OOMKills == 0 {
		return ""
	}
	limit := "none"
	if u.MemoryLimitBytes > 0 {
		limit = FormatBytes(u.MemoryLimitBytes)
	}
	return fmt.Sprintf("%s OOMKilled: the kernel killed %d process(es) at the memory limit %s; peak %s charged, working set peak %s",
		replica, u.OOMKills, limit, FormatBytes(max(u.MemoryHighWaterBytes, u.MemoryPeakBytes)), FormatBytes(u.MemoryPeakBytes))
}

// ReadUsage reads the usage record of the replica stored under the prefix replica; an
// error wrapping ErrNotFound when it has none.
func ReadUsage(ctx context.Context, c *Client, replica URI) (*Usage, error) {
	var buf bytes.Buffer
	u := replica.Join(UsageName)
	if _, err := c.Download(ctx, u, &buf); err != nil {
		return nil, fmt.Errorf("reading the usage record: %w", err)
	}
	r := &Usage{}
	if err := json.Unmarshal(buf.Bytes(), r); err != nil {
		return nil, fmt.Errorf("reading the usage record %s: %v", u, err)
	}
	return r, nil
}
