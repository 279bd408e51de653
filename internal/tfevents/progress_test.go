package tfevents

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTrackerOfKerasFit(t *testing.T) {
	want := expected(t)
	tr := NewTracker()
	if tr.Progress() != nil {
		t.Fatal("a tracker that read nothing has progress")
	}
	for _, run := range []string{"fit/train", "fit/validation"} {
		var rd Reader
		events, err := rd.ReadFile(eventFile(t, run), -1)
		if err != nil {
			t.Fatal(err)
		}
		tr.Add(run, events)
	}
	p := tr.Progress()
	// The step is the highest of any scalar: Keras writes evaluations at the
	// optimizer's step count, 4 steps an epoch.
	if p.Step != 12 {
		t.Errorf("step %d, want 12", p.Step)
	}
	got := map[string][][2]float64{}
	for key, points := range p.Series {
		for _, pt := range points {
			got[key] = append(got[key], [2]float64{float64(pt.Step), float64(pt.Value)})
		}
		if last := points[len(points)-1]; p.Scalars[key].Step != last.Step || p.Scalars[key].Value != last.Value {
			t.Errorf("scalar %s last %+v, its series ends with %+v", key, p.Scalars[key], last)
		}
	}
	if diff := cmp.Diff(only(want, "fit"), got); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	key, last, ok := p.Loss()
	if wantLast := want["fit/train/epoch_loss"][2]; !ok || key != "fit/train/epoch_loss" || last.Step != 2 || float64(last.Value) != wantLast[1] {
		t.Errorf("Loss() = %q, %+v, %v; want fit/train/epoch_loss at step 2, %v", key, last, ok, wantLast[1])
	}
	if age := time.Since(p.WallTime); p.WallTime.Year() < 2025 || age < 0 {
		t.Errorf("wall time %v", p.WallTime)
	}
}

func TestLossPrefersTraining(t *testing.T) {
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{"logs/validation/epoch_loss", "logs/train/epoch_loss", "logs/train/epoch_accuracy"}, "logs/train/epoch_loss"},
		{[]string{"eval/loss", "accuracy"}, "eval/loss"},
		{[]string{"batch_loss", "loss"}, "loss"},
		{[]string{"accuracy"}, ""},
	} {
		p := &Progress{Scalars: map[string]Last{}}
		for _, k := range tc.keys {
			p.Scalars[k] = Last{}
		}
		if got, _, _ := p.Loss(); got != tc.want {
			t.Errorf("Loss() of %v = %q, want %q", tc.keys, got, tc.want)
		}
	}
}

func TestTrackerThinsEvenly(t *testing.T) {
	tr := NewTracker()
	const n = 10007
	for step := range int64(n) {
		tr.Add("logs/train", []Event{{Step: step, WallTime: 1.7e9 + float64(step), Scalars: []Scalar{{Tag: "loss", Value: float64(step) / 2}}}})
	}
	p := tr.Progress()
	points := p.Series["logs/train/loss"]
	if len(points) != MaxPoints || points[0].Step != 0 || points[len(points)-1].Step != n-1 {
		t.Fatalf("%d points from step %d to %d; want %d from 0 to %d", len(points), points[0].Step, points[len(points)-1].Step, MaxPoints, n-1)
	}
	// Evenly: the gaps differ by at most the kept series' stride, 16 here.
	lo, hi := int64(math.MaxInt64), int64(0)
	for i := 1; i < len(points); i++ {
		gap := points[i].Step - points[i-1].Step
		lo, hi = min(lo, gap), max(hi, gap)
		if points[i].Value != Value(float64(points[i].Step)/2) {
			t.Fatalf("point %+v: value of another step", points[i])
		}
	}
	if hi-lo > 16 {
		t.Errorf("gaps between points from %d to %d steps", lo, hi)
	}
	if p.Step != n-1 || p.Scalars["logs/train/loss"].Step != n-1 || !p.WallTime.Equal(time.Unix(1.7e9+n-1, 0)) {
		t.Errorf("step %d, last %+v, wall time %v", p.Step, p.Scalars["logs/train/loss"], p.WallTime)
	}
}

func TestProgressSizeIsBounded(t *testing.T) {
	tr := NewTracker()
	for step := range int64(2000) {
		ev := Event{Step: step, WallTime: 1.7e9}
		for i := range 100 {
			ev.Scalars = append(ev.Scalars, Scalar{Tag: fmt.Sprintf("metric_%03d", i), Value: 1.0 / 3 * float64(step)})
		}
		tr.Add("logs/train", []Event{ev})
	}
	p := tr.Progress()
	if len(p.Scalars) != MaxScalars || p.Omitted != 100-MaxScalars {
		t.Errorf("%d scalars, %d omitted; want %d and %d", len(p.Scalars), p.Omitted, MaxScalars, 100-MaxScalars)
	}
	total := 0
	for _, s := range p.Series {
		total += len(s)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if total > SeriesBudget || len(b) > 150<<10 {
		t.Errorf("%d points, %d bytes of JSON; want at most %d points and 150 KiB", total, len(b), SeriesBudget)
	}
	t.Logf("%d scalars of 2000 steps: %d points, %d bytes of JSON", len(p.Scalars), total, len(b))
}

func TestProgressJSON(t *testing.T) {
	wall := time.Date(2026, 11, 27, 1, 2, 3, 456000, time.UTC)
	p := &Progress{
		Step: 7, WallTime: wall, Updated: wall.Add(time.Second),
		Scalars: map[string]Last{"train/loss": {Step: 7, Value: Value(math.NaN()), WallTime: wall}, "train/acc": {Step: 7, Value: 0.5, WallTime: wall}},
		Series:  map[string][]Point{"train/loss": {{Step: 0, Value: 2.5}, {Step: 7, Value: Value(math.Inf(1))}}, "train/acc": {{Step: 7, Value: Value(math.Inf(-1))}}},
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"step":7,"wallTime":"2026-11-27T01:02:03.000456Z","updated":"2026-11-27T01:02:04.000456Z",` +
		`"scalars":{"train/acc":{"step":7,"value":0.5,"wallTime":"2026-11-27T01:02:03.000456Z"},"train/loss":{"step":7,"value":"NaN","wallTime":"2026-11-27T01:02:03.000456Z"}},` +
		`"series":{"train/acc":[[7,"-Infinity"]],"train/loss":[[0,2.5],[7,"Infinity"]]}}`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
	var back Progress
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	// NaN is not equal to itself: compare the JSON of the JSON.
	again, _ := json.Marshal(&back)
	if string(again) != want {
		t.Errorf("JSON read back and written again\n%s\nwant\n%s", again, want)
	}
}
