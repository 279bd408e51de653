package runs

import (
	"encoding/json"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// leadReplicas are the replicas whose progress stands for the run's, in order: the one
// that drives training, else the first worker.
var leadReplicas = []string{"chief-0", "master-0", "worker-0"}

// leadProgress is the progress record of the run's lead replica, else its first one.
func leadProgress(s storage.StoredRun) (storage.URI, bool) {
	for _, lead := range leadReplicas {
		for _, u := range s.Progress {
			if strings.HasSuffix(u.Key, "/"+lead+"/"+storage.ProgressName) {
				return u, true
			}
		}
	}
	if len(s.Progress) > 0 {
		return s.Progress[0], true
	}
	return storage.URI{}, false
}

// lossTags are the tags of a training loss, as tf.summary and Keras' TensorBoard
// callback name them.
var lossTags = []string{"loss", "epoch_loss"}

// loss is the last value of the main scalar of a progress record (the agent's
// progress.json, a tfevents.Progress): a training loss before a validation one; ""
// for a record without one or that does not parse.
func loss(record []byte) string {
	var p struct {
		Scalars map[string]struct {
			Value json.RawMessage `json:"value"`
		} `json:"scalars"`
	}
	if json.Unmarshal(record, &p) != nil {
		return ""
	}
	keys := make([]string, 0, len(p.Scalars))
	for k := range p.Scalars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, evaluation := range []bool{false, true} {
		for _, tag := range lossTags {
			for _, k := range keys {
				run, t := path.Split(k)
				run = strings.ToLower(run)
				if t == tag && (strings.Contains(run, "validation") || strings.Contains(run, "eval")) == evaluation {
					return formatValue(p.Scalars[k].Value)
				}
			}
		}
	}
	return ""
}

// formatValue renders a scalar's value with 4 significant digits; NaN and the
// infinities, stored as strings, as they are.
func formatValue(v json.RawMessage) string {
	var f float64
	if json.Unmarshal(v, &f) == nil {
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
	return strings.Trim(string(v), `"`)
}
