package controller

import (
	"fmt"
	"sort"
	"strings"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// reservedDomains are the label and annotation domains only the controller writes on
// a job's pods. Services, forwards, Kueue and the retry delay read pods by them, so a
// template that set them could join another notebook's Service or shorten its backoff.
var reservedDomains = []string{"tfk8s.io", "training.kubeflow.org"}

// isReservedKey reports whether a label or annotation key is in a reserved domain or
// one of its subdomains.
func isReservedKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	prefix = strings.ToLower(prefix)
	for _, d := range reservedDomains {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// withoutReserved returns a copy of a template's labels or annotations without the
// reserved keys, and the keys it left out, sorted.
func withoutReserved(in map[string]string) (kept map[string]string, dropped []string) {
	if len(in) == 0 {
		return nil, nil
	}
	kept = make(map[string]string, len(in))
	for k, v := range in {
		if isReservedKey(k) {
			dropped = append(dropped, k)
			continue
		}
		kept[k] = v
	}
	sort.Strings(dropped)
	return kept, dropped
}

// reservedTemplateFields lists, by path, the reserved labels and annotations of the
// job's replica templates, which ConstructPod leaves out of the pods.
func reservedTemplateFields(job *tfv1.TFJob) []ignoredField {
	var out []ignoredField
	for _, rt := range tfv1.ReplicaTypes {
		spec, ok := job.Spec.TFReplicaSpecs[rt]
		if !ok || spec == nil {
			continue
		}
		for _, f := range []struct {
			name string
			m    map[string]string
		}{{"labels", spec.Template.Labels}, {"annotations", spec.Template.Annotations}} {
			_, dropped := withoutReserved(f.m)
			for _, k := range dropped {
				out = append(out, ignoredField{path: fmt.Sprintf("tfReplicaSpecs.%s.template.metadata.%s[%s]", rt, f.name, k)})
			}
		}
	}
	return out
}

// reservedFieldsMessage says that the controller left the reserved labels and
// annotations of the templates out of the pods, each by its path.
func reservedFieldsMessage(fields []ignoredField) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = "spec." + f.path
	}
	return fmt.Sprintf("labels and annotations under %s/ are written by the controller alone: ignored %s",
		strings.Join(reservedDomains, "/ and "), strings.Join(names, ", "))
}
