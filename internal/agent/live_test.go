package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestLiveProgressServesWhatTheStatusTakes checks that names longer than the status
// takes are left out before the cap of tfjob.MaxLiveMetrics, not counted in it.
func TestLiveProgressServesWhatTheStatusTakes(t *testing.T) {
	long := strings.Repeat("n", tfjob.MaxMetricNameBytes+1)
	p := &tfevents.Progress{Step: 9, Scalars: map[string]tfevents.Last{}}
	for _, k := range []string{long + "/loss", long + "a", long + "b", "a", "b", "c", "d", "e", "f", "g", "h", "i", "bad\x1b"} {
		p.Scalars[k] = tfevents.Last{Value: 1}
	}
	p.Scalars["train/loss"] = tfevents.Last{Value: 0.5}
	lp := newLiveProgress(p, 0)
	var names []string
	for _, m := range lp.Metrics {
		names = append(names, m.Name)
	}
	if want := []string{"train/loss", "a", "b", "c", "d", "e", "f", "g"}; !cmp.Equal(want, names) {
		t.Errorf("served %q, want %q", names, want)
	}
	b, err := json.Marshal(lp)
	if err != nil || len(b) > tfjob.MaxLiveProgressBytes {
		t.Errorf("body of %d bytes (%v), want at most %d", len(b), err, tfjob.MaxLiveProgressBytes)
	}
}
