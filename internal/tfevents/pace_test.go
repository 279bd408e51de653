package tfevents

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTrackerRateAndTotal(t *testing.T) {
	scalar := func(step int64, wall float64, tag string, v float64) Event {
		return Event{Step: step, WallTime: 1.8e9 + wall, Scalars: []Scalar{{Tag: tag, Value: v}}}
	}
	type got struct {
		Step, Total int64
		Rate        float64
		Keys        int
	}
	cases := []struct {
		name   string
		events []Event
		want   got
	}{
		{"one step: no rate", []Event{scalar(10, 0, "loss", 1)}, got{Step: 10, Keys: 1}},
		{"ten steps a second", []Event{scalar(0, 0, "loss", 1), scalar(50, 5, "loss", 1), scalar(100, 10, "loss", 1)},
			got{Step: 100, Rate: 10, Keys: 1}},
		{
			// The window keeps the last minute: the slow start no longer counts.
			"the recent rate", []Event{scalar(0, 0, "loss", 1), scalar(10, 100, "loss", 1), scalar(110, 110, "loss", 1), scalar(210, 120, "loss", 1)},
			got{Step: 210, Rate: 10, Keys: 1},
		},
		{"a total is no scalar of the record", []Event{scalar(0, 0, TotalStepsTag, 500), scalar(5, 1, "loss", 1)},
			got{Step: 5, Total: 500, Rate: 5, Keys: 1}},
		{"the last total counts", []Event{scalar(0, 0, TotalStepsTag, 500), scalar(1, 1, TotalStepsTag, 800)},
			got{Step: 1, Total: 800, Rate: 1}},
		{"tfk8s's own step moves the step alone", []Event{scalar(0, 0, "epoch_loss", 1), scalar(40, 4, OwnTagPrefix+"step", 40)},
			got{Step: 40, Rate: 10, Keys: 1}},
		{"a nonsense total is unknown", []Event{scalar(0, 0, TotalStepsTag, math.NaN()), scalar(1, 1, "loss", 1), scalar(2, 2, TotalStepsTag, -3)},
			got{Step: 2, Rate: 1, Keys: 1}},
		{"an epoch summary behind the step does not slow it", []Event{scalar(0, 0, "batch_loss", 1), scalar(100, 10, "batch_loss", 1), scalar(1, 11, "epoch_loss", 1)},
			got{Step: 100, Rate: 10, Keys: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker()
			tr.Add("train", tc.events)
			p := tr.Progress()
			var g got
			if p != nil {
				g = got{Step: p.Step, Total: p.TotalSteps, Rate: p.StepsPerSecond, Keys: len(p.Scalars)}
			} else {
				g = got{Step: tr.step, Total: tr.total, Rate: tr.pace.rate()}
			}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPaceIsBounded(t *testing.T) {
	var p pace
	for i := range int64(10000) {
		p.add(i, float64(i)/1000) // 1000 steps a second, all within the window
	}
	if len(p.samples) > paceSamples {
		t.Errorf("%d samples kept, want at most %d", len(p.samples), paceSamples)
	}
	if r := p.rate(); math.Abs(r-1000) > 1e-6 {
		t.Errorf("rate %v, want 1000", r)
	}
}
