package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// describeRunUsage writes what each replica's latest attempt used, beside its memory
// limit: a user sizing the next run reads the peaks, and an OOM kill its figures.
func describeRunUsage(w io.Writer, replicas []runs.Replica) error {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "Usage:")
	n := 0
	for _, r := range replicas {
		if r.Usage == nil && r.UsageErr == nil {
			continue
		}
		if n == 0 {
			fmt.Fprintln(tw, "  REPLICA\tATTEMPT\tCPU MEAN\tCPU PEAK\tCPU TIME\tMEMORY MEAN\tMEMORY PEAK\tLIMIT\tOOM KILLS")
		}
		n++
		if r.UsageErr != nil {
			fmt.Fprintf(tw, "  %s\t<%v>\n", r.Name, r.UsageErr)
			continue
		}
		u := r.Usage
		fmt.Fprintf(tw, "  %s\t%d\t%.2f\t%.2f\t%.1fs\t%s\t%s\t%s\t%d\n", r.Name, u.Attempt, u.CPUCoresMean, u.CPUCoresPeak,
			u.CPUSeconds, storage.FormatBytes(u.MemoryMeanBytes), storage.FormatBytes(u.MemoryPeakBytes),
			memoryLimit(u.MemoryLimitBytes), u.OOMKills)
	}
	if n == 0 {
		fmt.Fprintln(tw, "  <none>")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range replicas {
		if msg := r.Usage.OOMMessage(r.Name); msg != "" {
			fmt.Fprintf(w, "  %s\n", msg)
		}
	}
	return describeRunGPUs(w, replicas)
}

// describeRunGPUs writes each GPU a replica's agent read through NVML, where any did:
// an idle GPU beside a busy CPU is an input pipeline that starves it.
func describeRunGPUs(w io.Writer, replicas []runs.Replica) error {
	if !slices.ContainsFunc(replicas, func(r runs.Replica) bool { return r.Usage != nil && len(r.Usage.GPUs) > 0 }) {
		return nil
	}
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "GPUs:")
	fmt.Fprintln(tw, "  REPLICA\tGPU\tUTILISATION MEAN\tUTILISATION PEAK\tMEMORY PEAK\tMEMORY TOTAL")
	for _, r := range replicas {
		if r.Usage == nil {
			continue
		}
		for _, g := range r.Usage.GPUs {
			fmt.Fprintf(tw, "  %s\t%d\t%.0f%%\t%d%%\t%s\t%s\n", r.Name, g.Index, g.UtilizationMeanPercent, g.UtilizationPeakPercent,
				storage.FormatBytes(g.MemoryPeakBytes), storage.FormatBytes(g.MemoryTotalBytes))
		}
	}
	return tw.Flush()
}

// describeRunAdvice writes a finished run's right-sizing advice, and how to apply
// it, and why a type has none where some replica of a run that ended recorded its
// usage; nothing otherwise, as most runs ask for about what they use.
func describeRunAdvice(w io.Writer, d *runs.Details) error {
	recorded := !d.Running() && slices.ContainsFunc(d.Manifests, func(r runs.Replica) bool { return r.Usage != nil })
	if len(d.Advice) == 0 && (len(d.NoAdvice) == 0 || !recorded) {
		return nil
	}
	fmt.Fprintln(w, "Right-sizing:")
	for _, a := range d.Advice {
		fmt.Fprintf(w, "  %s\n", a)
	}
	if recorded {
		for _, why := range d.NoAdvice {
			fmt.Fprintf(w, "  %s\n", why)
		}
	}
	if !slices.ContainsFunc(d.Advice, runs.Advice.Applies) {
		return nil
	}
	also := ""
	if flags := runs.AdviceFlags(d.Job, d.Advice); len(flags) > 0 {
		also = ", as would " + strings.Join(flags, " ")
	}
	_, err := fmt.Fprintf(w, "  tfk8s submit --from-run %s/%s --right-size applies it%s\n", d.Name, d.Run.Run, also)
	return err
}

// memoryLimit renders a usage record's limit.
func memoryLimit(n int64) string {
	if n == 0 {
		return "none"
	}
	return storage.FormatBytes(n)
}
