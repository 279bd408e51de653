package build

import (
	"sort"
	"strings"
)

// ReservedDomains are the label and annotation domains only the controller writes on
// a job's pods. Services, forwards, Kueue and the retry delay read pods by them, so a
// template that set them could join another notebook's Service or shorten its backoff.
var ReservedDomains = []string{"tfk8s.io", "training.kubeflow.org"}

// isReservedKey reports whether a label or annotation key is in a reserved domain or
// one of its subdomains.
func isReservedKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	prefix = strings.ToLower(prefix)
	for _, d := range ReservedDomains {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// WithoutReserved returns a copy of a template's labels or annotations without the
// reserved keys, and the keys it left out, sorted.
func WithoutReserved(in map[string]string) (kept map[string]string, dropped []string) {
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
