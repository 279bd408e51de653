package dashboard

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/tfevents"
)

func TestCharts(t *testing.T) {
	nan := tfevents.Value(math.NaN())
	lines := []curveLine{
		{Label: "chief-0", Series: map[string][]tfevents.Point{
			"train/loss":     {{Step: 0, Value: 2}, {Step: 10, Value: 1}, {Step: 20, Value: nan}, {Step: 20, Value: 0.5}},
			"train/accuracy": {{Step: 10, Value: 0.9}},
		}},
		{Label: "worker-1", Series: map[string][]tfevents.Point{
			"train/loss": {{Step: 5, Value: 1.5}, {Step: 10, Value: 1.25}, {Step: 15, Value: tfevents.Value(math.Inf(1))}},
		}},
		{Label: "ps-0"}, // no series: no line anywhere
	}
	got, err := chartsJSON(lines)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by scalar; on the steps of every line; null where a line has no point or
	// no finite value; the later of two points at a step.
	want := `[{"scalar":"train/accuracy","lines":["chief-0"],"steps":[10],"values":[[0.9]]},` +
		`{"scalar":"train/loss","lines":["chief-0","worker-1"],"steps":[0,5,10,15,20],` +
		`"values":[[2,null,1,null,0.5],[null,1.5,1.25,null,null]]}]`
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("charts (-want +got):\n%s", d)
	}
	if got, _ := chartsJSON(nil); got != "[]" {
		t.Errorf("charts of no lines: %s, want []", got)
	}
}
