package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
)

// maxDescribedScalars bounds the scalars describe lists; the dashboard shows them all.
const maxDescribedScalars = 20

// describeProgress writes how far the job has got, from the progress record of its
// lead replica's agent, and, for a job that runs (non-nil), how late those figures may
// be; err, if it could not be read.
func describeProgress(w io.Writer, job *tfv1.TFJob, p *jobs.JobProgress, err error, now time.Time) error {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "Progress:")
	switch {
	case err != nil:
		fmt.Fprintf(tw, "  <unknown: %v>\n", err)
		return tw.Flush()
	case p == nil:
		fmt.Fprintln(tw, "  <none stored yet: no TensorFlow summaries among the artifacts uploaded so far>")
		return tw.Flush()
	}
	fmt.Fprintf(tw, "  Step:\t%d (from %s's summaries)\n", p.Step, p.Replica)
	if key, last, ok := p.Loss(); ok {
		fmt.Fprintf(tw, "  Loss:\t%s (%s at step %d)\n", last.Value.Display(), key, last.Step)
	}
	if job != nil {
		fmt.Fprintf(tw, "  Updated:\t%s; %s\n", ago(p.Updated, now), jobs.ProgressLag(job))
	} else {
		fmt.Fprintf(tw, "  Updated:\t%s\n", ago(p.Updated, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = newTabWriter(w) // the table's columns are not the fields'
	fmt.Fprintln(tw, "  SCALAR\tSTEP\tVALUE")
	keys := slices.Sorted(maps.Keys(p.Scalars))
	for _, k := range keys[:min(len(keys), maxDescribedScalars)] {
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", k, p.Scalars[k].Step, p.Scalars[k].Value.Display())
	}
	if more := len(keys) - maxDescribedScalars + p.Omitted; more > 0 {
		fmt.Fprintf(tw, "  … and %d more\n", more)
	}
	return tw.Flush()
}
