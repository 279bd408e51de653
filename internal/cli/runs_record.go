package cli

import (
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

// fromRun is the job submit --from-run makes of a stored run, and what the user must
// know before it is created.
type fromRun struct {
	job *tfv1.TFJob
	// ignored says, a sentence each, what of the record was left out.
	ignored []string
	// unverified says why the spec is shown rather than submitted without --yes; ""
	// when it is the job's last known spec.
	unverified string
}

// recordManifest makes the job of run r. Everyone holding the bucket's keys can
// rewrite run.json, so the record is data: the namespace and name are where it was
// found (r.Namespace, r.Name: its S3 prefix), labels and annotations of reserved
// domains are left out, and a spec that is not last's (the TFJob of that name in the
// cluster, nil when there is none) is unverified.
func recordManifest(r runs.Run, last *tfv1.TFJob) fromRun {
	rec := r.Job
	out := fromRun{job: jobspec.NewTFJob()}
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
