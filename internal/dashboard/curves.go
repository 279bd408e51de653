package dashboard

import (
	"encoding/json"
	"maps"
	"math"
	"slices"

	"github.com/tfk8s/tfk8s/internal/tfevents"
)

// curveLine is one line of a page's curves: the series of a job's replica, by scalar
// ("<run>/<tag>"), as its progress record holds them. A page of several runs would
// make one line per run, and draw them with the same charts and script.
type curveLine struct {
	Label  string
	Series map[string][]tfevents.Point
}

// chart is one scalar's curves as static/dashboard.js hands them to uPlot, which
// wants the lines of a chart on one x axis: the steps of every line's points, and
// each line's values at those steps, null where a line has no point or a value JSON
// cannot hold (NaN, infinite).
type chart struct {
	Scalar string       `json:"scalar"`
	Lines  []string     `json:"lines"`
	Steps  []int64      `json:"steps"`
	Values [][]*float64 `json:"values"`
	// X names the x axis where it is not the steps (usage curves: seconds).
	X string `json:"x,omitempty"`
}

// charts draws one chart per scalar, sorted by scalar, with a line for each of lines
// that has the scalar, in their order.
func charts(lines []curveLine) []chart {
	scalars := map[string]bool{}
	for _, l := range lines {
		for k := range l.Series {
			scalars[k] = true
		}
	}
	out := make([]chart, 0, len(scalars))
	for _, scalar := range slices.Sorted(maps.Keys(scalars)) {
		out = append(out, chartOf(scalar, lines))
	}
	return out
}

// chartOf aligns the series of one scalar on the steps of all of them; of two points
// of a line at the same step (a replica that restarted), the later wins.
func chartOf(scalar string, lines []curveLine) chart {
	c := chart{Scalar: scalar}
	var byStep []map[int64]*float64
	for _, l := range lines {
		points, ok := l.Series[scalar]
		if !ok {
			continue
		}
		values := make(map[int64]*float64, len(points))
		for _, p := range points {
			values[p.Step] = finite(p.Value)
		}
		c.Lines = append(c.Lines, l.Label)
		byStep = append(byStep, values)
	}
	steps := map[int64]bool{}
	for _, values := range byStep {
		for step := range values {
			steps[step] = true
		}
	}
	c.Steps = slices.Sorted(maps.Keys(steps))
	for _, values := range byStep {
		column := make([]*float64, len(c.Steps))
		for i, step := range c.Steps {
			column[i] = values[step]
		}
		c.Values = append(c.Values, column)
	}
	return c
}

// finite is v, or nil when JSON cannot hold it.
func finite(v tfevents.Value) *float64 {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// chartsJSON is the charts of lines as the data-curves attribute holds them.
func chartsJSON(lines []curveLine) (string, error) {
	return marshalCharts(charts(lines))
}

// marshalCharts is charts as JSON.
func marshalCharts(cs []chart) (string, error) {
	b, err := json.Marshal(cs)
	return string(b), err
}
