package dashboard

import (
	"context"
	"errors"
	"slices"
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

// The job page's usage curves: each replica's CPU and memory over time, from the
// usage.json its agent stores at every upload, drawn by the training curves' code.

// Usage curves' scalars: the charts' captions.
const (
	usageCPU    = "usage/cpu (cores)"
	usageMemory = "usage/memory (MiB)"
)

// replicaUsage is one replica's usage record.
type replicaUsage struct {
	Replica string
	Usage   *storage.Usage
}

// readUsage reads the usage records of the job's first limit replicas under base; a
// replica that stored none has no line.
func readUsage(ctx context.Context, c *storage.Client, job *tfv1.TFJob, base storage.URI, limit int) ([]replicaUsage, error) {
	names := jobs.Replicas(job)
	names = names[:min(limit, len(names))]
	found := make([]replicaUsage, len(names))
	errs := make([]error, len(names))
	jobs.Parallel(len(names), limit, func(i int) {
		u, err := storage.ReadUsage(ctx, c, base.Join(names[i]+"/"))
		if errors.Is(err, storage.ErrNotFound) {
			err = nil
		}
		found[i], errs[i] = replicaUsage{Replica: names[i], Usage: u}, err
	})
	found = slices.DeleteFunc(found, func(r replicaUsage) bool { return r.Usage == nil })
	return found, errors.Join(errs...)
}

// usageLines are the replicas' usage series as curve lines whose steps are the
// seconds since the earliest sample of all, so that the lines share one time axis.
func usageLines(records []replicaUsage) []curveLine {
	var start time.Time
	for _, r := range records {
		for _, p := range r.Usage.Series {
			if start.IsZero() || p.Time.Before(start) {
				start = p.Time
			}
		}
	}
	lines := make([]curveLine, 0, len(records))
	for _, r := range records {
		var cpu, mem []tfevents.Point
		for _, p := range r.Usage.Series {
			at := int64(p.Time.Sub(start).Seconds())
			cpu = append(cpu, tfevents.Point{Step: at, Value: tfevents.Value(p.CPUCores)})
			mem = append(mem, tfevents.Point{Step: at, Value: tfevents.Value(float64(p.MemoryBytes) / (1 << 20))})
		}
		if len(cpu) > 0 {
			lines = append(lines, curveLine{Label: r.Replica, Series: map[string][]tfevents.Point{usageCPU: cpu, usageMemory: mem}})
		}
	}
	return lines
}

// usageChartsJSON is the usage charts as the data-curves attribute holds them, their
// x axis in seconds; "" when no replica has a series.
func usageChartsJSON(records []replicaUsage) (string, error) {
	lines := usageLines(records)
	if len(lines) == 0 {
		return "", nil
	}
	cs := charts(lines)
	for i := range cs {
		cs[i].X = "seconds"
	}
	return marshalCharts(cs)
}
