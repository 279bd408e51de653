package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/runs"
)

// recordDomains are the label and annotation domains a run record may not carry over
// into a job: the controller's and Kubeflow's, which it alone writes.
var recordDomains = []string{"tfk8s.io", "training.kubeflow.org"}

// baseJob is the job the flags apply over (-f, --from-run), and what the user must
// know of it before it is created.
type baseJob struct {
	job *tfv1.TFJob
	// ignored says, a sentence each, what of the record was left out.
	ignored []string
	// unverified says why the spec is shown rather than submitted without --yes; ""
	// when it is the job's last known spec.
	unverified string
	// resized says, a line each, what --right-size changed or why it did not.
	resized []string
}

// runBase is the job a stored run was submitted as, for submit --from-run: its
// run.json, or its TFJob while it exists, as recordManifest makes it, right-sized if
// asked. The Secret submit made for the job went with it, so the job's storage is
// left for submit to make again. It reads first (readRun), then decides (runJob),
// and prints what the record said that was ignored and what right-sizing did.
func (o *rootOptions) runBase(ctx context.Context, name string, rightSize bool) (baseJob, error) {
	seen, err := o.readRun(ctx, name, rightSize)
	if err != nil {
		return baseJob{}, err
	}
	base := runJob(seen)
	for _, ig := range base.ignored {
		fmt.Fprintf(o.env.ErrOut, "warning: --from-run %s: ignored %s in run.json\n", name, ig)
	}
	for _, line := range base.resized {
		fmt.Fprintf(o.env.ErrOut, "--right-size: %s\n", line)
	}
	return base, nil
}

// readRun reads what --from-run makes its job of: the run with the TFJob of its name,
// and for --right-size the run's advice.
func (o *rootOptions) readRun(ctx context.Context, name string, rightSize bool) (seenRun, error) {
	c, found, err := o.findRun(ctx, name)
	r := found.Run
	switch {
	case err != nil:
		return seenRun{}, fmt.Errorf("--from-run %s: %w", name, err)
	case r.Job == nil:
		return seenRun{}, fmt.Errorf("--from-run %s: run %s/%s has no record of its job (run.json) to submit again", name, r.Name, r.Run)
	}
	seen := seenRun{run: r, live: found.LiveJob}
	if !rightSize {
		return seen, nil
	}
	if r.Running() {
		return seenRun{}, fmt.Errorf("--right-size: run %s/%s is still running, and its peaks may still rise: right-size it once it ends", r.Name, r.Run)
	}
	if seen.details, err = runs.Show(ctx, c, r); err != nil {
		return seenRun{}, fmt.Errorf("--right-size: %w", err)
	}
	return seen, nil
}

// seenRun is what submit --from-run read of a run.
type seenRun struct {
	run runs.Run
	// live is the TFJob of the run's name in the cluster, nil for none.
	live *tfv1.TFJob
	// details holds the run's right-sizing advice; nil without --right-size.
	details *runs.Details
}

// runJob makes the job of a run read for --from-run: recordManifest's, with the run's
// right-sizing advice applied when it was read. A user who asked for it sees the new
// requests before the job runs with them.
func runJob(seen seenRun) baseJob {
	base := recordManifest(seen.run, seen.live)
	if d := seen.details; d != nil {
		base.resized = rightSizeNotes(d, runs.ApplyAdvice(base.job, d.Advice))
	}
	return base
}

// rightSizeNotes says what applying d's advice changed, and why the rest did not.
func rightSizeNotes(d *runs.Details, changed []string) []string {
	var out []string
	for _, why := range d.NoAdvice {
		out = append(out, fmt.Sprintf("run %s/%s: %s", d.Name, d.Run.Run, why))
	}
	for _, a := range d.Advice {
		if !a.Applies() {
			out = append(out, fmt.Sprintf("not a request to change: %s", a))
		}
	}
	if len(changed) == 0 {
		out = append(out, fmt.Sprintf("run %s/%s has no advice to apply: nothing changed", d.Name, d.Run.Run))
	}
	return append(out, changed...)
}

// recordManifest makes the job of run r. Everyone holding the bucket's keys can
// rewrite run.json, so the record is data: the namespace and name are where it was
// found (r.Namespace, r.Name: its S3 prefix), labels and annotations of reserved
// domains are left out, and a spec that is not last's (the TFJob of that name in the
// cluster, nil when there is none) is unverified; last is not looked at when r is
// the live job itself.
func recordManifest(r runs.Run, last *tfv1.TFJob) baseJob {
	rec := r.Job
	out := baseJob{job: jobspec.NewTFJob()}
	job := out.job
	job.Name, job.Namespace = r.Name, r.Namespace
	if rec.Namespace != "" && rec.Namespace != r.Namespace {
		out.ignored = append(out.ignored, fmt.Sprintf("namespace %q (the run is stored under namespace %s)", rec.Namespace, r.Namespace))
	}
	if rec.Name != "" && rec.Name != r.Name {
		out.ignored = append(out.ignored, fmt.Sprintf("name %q (the run is stored under job %s)", rec.Name, r.Name))
	}
	var dropped []string
	job.Labels, dropped = withoutRecordDomains(rec.Labels)
	out.ignored = append(out.ignored, prefixed("label ", dropped)...)
	job.Annotations, dropped = withoutRecordDomains(rec.Annotations)
	out.ignored = append(out.ignored, prefixed("annotation ", dropped)...)
	job.Spec = resubmittable(rec)
	switch {
	case r.Live:
		// r.Job is the TFJob as the cluster has it, not the record.
	case last == nil:
		out.unverified = fmt.Sprintf("no tfjob %s/%s is left to compare run.json's spec with", r.Namespace, r.Name)
	default:
		if fields := specDiff(job.Spec, resubmittable(last)); len(fields) > 0 {
			out.unverified = fmt.Sprintf("run.json's spec differs from tfjob %s/%s's in the cluster in spec.%s",
				r.Namespace, r.Name, strings.Join(fields, ", spec."))
		}
	}
	return out
}

// resubmittable is a job's spec as submitted again: not suspended, and without the
// storage Secret submit made for it, which went with it and is made again.
func resubmittable(job *tfv1.TFJob) tfv1.TFJobSpec {
	spec := *job.Spec.DeepCopy()
	spec.RunPolicy.Suspend = nil
	if s := spec.Storage; s != nil && s.SecretRef.Name == jobs.StorageSecretName(job.Name) {
		spec.Storage = nil
	}
	return spec
}

// withoutRecordDomains returns m without the keys of recordDomains, and those keys.
func withoutRecordDomains(m map[string]string) (map[string]string, []string) {
	var dropped []string
	kept := maps.Clone(m)
	for k := range m {
		domain, _, ok := strings.Cut(k, "/")
		if !ok {
			continue
		}
		for _, d := range recordDomains {
			if domain == d || strings.HasSuffix(domain, "."+d) {
				dropped = append(dropped, k)
				delete(kept, k)
				break
			}
		}
	}
	slices.Sort(dropped)
	return kept, dropped
}

// prefixed puts prefix before each of names.
func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// specDiff names the top-level spec fields in which a and b differ, sorted.
func specDiff(a, b tfv1.TFJobSpec) []string {
	am, bm := specFields(a), specFields(b)
	var out []string
	for k := range am {
		if !reflect.DeepEqual(am[k], bm[k]) {
			out = append(out, k)
		}
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// specFields is a spec as its JSON fields, so that specs compare as the API server
// stores them.
func specFields(s tfv1.TFJobSpec) map[string]any {
	data, err := json.Marshal(s)
	if err != nil {
		panic(err) // a spec always encodes
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}
