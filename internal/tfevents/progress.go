package tfevents

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The bounds of a Progress record, which the agent rewrites as training goes on and
// the front ends read for every job listed: at most MaxScalars scalars, each with a
// series of at most MaxPoints points, and at most SeriesBudget points in all (about
// 20 bytes each, so some 100 KB at most).
const (
	MaxScalars   = 64
	MaxPoints    = 500
	SeriesBudget = 5000
)

// Progress is how far training has got, as the scalars of its event files tell: the
// record the agent stores beside a replica's attempts (progress.json) and the front
// ends read.
type Progress struct {
	// Step is the highest step of any scalar read.
	Step int64 `json:"step"`
	// WallTime is the newest wall time of a scalar read, by the trainer's clock.
	WallTime time.Time `json:"wallTime"`
	// Updated is when the agent stored the record.
	Updated time.Time `json:"updated"`
	// Scalars are each scalar's last value, by "<run>/<tag>", the run being the event
	// file's directory relative to its artifact path ("logs/train"); a file right in
	// the artifact path gives the tag alone.
	Scalars map[string]Last `json:"scalars"`
	// Series are each scalar's values over steps, by the same keys, oldest first:
	// evenly thinned out to at most MaxPoints (fewer when there are many scalars),
	// the first and last kept.
	Series map[string][]Point `json:"series,omitempty"`
	// Omitted counts the scalars left out beyond MaxScalars.
	Omitted int `json:"omitted,omitempty"`
	// TotalSteps is the step at which training ends, when the program said it with a
	// TotalStepsTag scalar (its last value); 0 when unknown.
	TotalSteps int64 `json:"totalSteps,omitempty"`
	// StepsPerSecond is the recent rate of Step by the trainer's clock (see pace.go);
	// 0 when unknown.
	StepsPerSecond float64 `json:"stepsPerSecond,omitempty"`
}

// Last is the last value of a scalar.
type Last struct {
	Step     int64     `json:"step"`
	Value    Value     `json:"value"`
	WallTime time.Time `json:"wallTime"`
}

// Point is a value at a step, [step, value] in JSON.
type Point struct {
	Step  int64
	Value Value
}

// MarshalJSON writes [step, value].
func (p Point) MarshalJSON() ([]byte, error) {
	v, err := p.Value.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "[%d,%s]", p.Step, v), nil
}

// UnmarshalJSON reads [step, value].
func (p *Point) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("a point is [step, value], not %s", b)
	}
	if err := json.Unmarshal(pair[0], &p.Step); err != nil {
		return err
	}
	return p.Value.UnmarshalJSON(pair[1])
}

// Value is a scalar's value. JSON has no NaN nor infinities, which a diverging loss
// reaches: they are written as the strings "NaN", "Infinity" and "-Infinity", which
// JavaScript's Number() reads back.
type Value float64

// Display renders the value with six significant digits, as tfk8s list, describe and
// the dashboard show scalars.
func (v Value) Display() string {
	return strconv.FormatFloat(float64(v), 'g', 6, 64)
}

// MarshalJSON writes a number, or a string for NaN and the infinities.
func (v Value) MarshalJSON() ([]byte, error) {
	f := float64(v)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return json.Marshal(f)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *Value) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("scalar value %s: %w", b, err)
		}
		*v = Value(f)
		return nil
	}
	return json.Unmarshal(b, (*float64)(v))
}

// lossTags are the tags of the main scalar, in order of preference: what
// tf.summary.scalar("loss") and Keras' TensorBoard callback write.
var lossTags = []string{"loss", "epoch_loss", "batch_loss"}

// Loss returns the main scalar, the training loss: a loss tag of a run that is not
// validation nor evaluation if there is one, else of any run; false if there is none.
func (p *Progress) Loss() (string, Last, bool) {
	keys := slices.Sorted(maps.Keys(p.Scalars))
	for _, evaluation := range []bool{false, true} {
		for _, tag := range lossTags {
			for _, k := range keys {
				run, t := path.Split(k)
				if t == tag && isEvaluation(run) == evaluation {
					return k, p.Scalars[k], true
				}
			}
		}
	}
	return "", Last{}, false
}

// isEvaluation tells the runs of Keras' validation and of evaluators.
func isEvaluation(run string) bool {
	run = strings.ToLower(run)
	return strings.Contains(run, "validation") || strings.Contains(run, "eval")
}

// Tracker folds the events of a replica's event files into a Progress.
type Tracker struct {
	step     int64
	wallTime float64
	last     map[string]Last
	series   map[string]*series
	omitted  map[string]bool
	total    int64
	pace     pace
}

// NewTracker returns a Tracker that has read nothing.
func NewTracker() *Tracker {
	return &Tracker{last: map[string]Last{}, series: map[string]*series{}, omitted: map[string]bool{}}
}

// Add takes in the events of an event file of run, in the order they were written.
func (t *Tracker) Add(run string, events []Event) {
	for _, ev := range events {
		if len(ev.Scalars) == 0 {
			continue
		}
		wall := wallTime(ev.WallTime)
		if ev.Step > t.step || t.pace.empty() {
			t.pace.add(ev.Step, ev.WallTime)
		}
		t.step, t.wallTime = max(t.step, ev.Step), max(t.wallTime, ev.WallTime)
		for _, s := range ev.Scalars {
			if s.Tag == TotalStepsTag {
				t.total = totalSteps(s.Value)
			}
			if strings.HasPrefix(s.Tag, OwnTagPrefix) {
				continue // it moves the step alone
			}
			key := path.Join(run, s.Tag)
			if _, ok := t.last[key]; !ok && len(t.last) >= MaxScalars {
				t.omitted[key] = true
				continue
			}
			t.last[key] = Last{Step: ev.Step, Value: Value(s.Value), WallTime: wall}
			if t.series[key] == nil {
				t.series[key] = &series{stride: 1}
			}
			t.series[key].add(Point{Step: ev.Step, Value: Value(s.Value)})
		}
	}
}

// Progress returns the record of what was added so far, without its Updated time;
// nil if no scalar was.
func (t *Tracker) Progress() *Progress {
	if len(t.last) == 0 {
		return nil
	}
	limit := max(2, min(MaxPoints, SeriesBudget/len(t.series)))
	p := &Progress{Step: t.step, WallTime: wallTime(t.wallTime), Scalars: maps.Clone(t.last),
		Series: make(map[string][]Point, len(t.series)), Omitted: len(t.omitted),
		TotalSteps: t.total, StepsPerSecond: t.pace.rate()}
	for key, s := range t.series {
		p.Series[key] = thin(s.points(), limit)
	}
	return p
}

// wallTime converts seconds since the epoch, to the microsecond.
func wallTime(s float64) time.Time {
	return time.UnixMicro(int64(math.Round(s * 1e6))).UTC()
}

// keptPoints is how many points a series keeps before halving them: twice what a
// record holds, so that thinning them to MaxPoints is even.
const keptPoints = 2 * MaxPoints

// series keeps every stride-th value of a scalar, the stride doubling whenever
// keptPoints are kept, and the last value.
type series struct {
	kept   []Point
	stride int
	seen   int
	last   Point
}

func (s *series) add(p Point) {
	if s.seen%s.stride == 0 {
		s.kept = append(s.kept, p)
		if len(s.kept) > keptPoints {
			for i := range (len(s.kept) + 1) / 2 {
				s.kept[i] = s.kept[2*i]
			}
			s.kept = s.kept[:(len(s.kept)+1)/2]
			s.stride *= 2
		}
	}
	s.seen++
	s.last = p
}

// points are the kept values and the last one.
func (s *series) points() []Point {
	if (s.seen-1)%s.stride == 0 {
		return s.kept // the last value was kept
	}
	return append(slices.Clip(s.kept), s.last)
}

// thin returns at most n of points, evenly spaced, the first and the last among them.
func thin(points []Point, n int) []Point {
	if len(points) <= n {
		return slices.Clone(points)
	}
	out := make([]Point, n)
	for i := range n {
		out[i] = points[i*(len(points)-1)/(n-1)]
	}
	return out
}
