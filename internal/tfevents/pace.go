package tfevents

import "math"

// Scalars whose tag starts with OwnTagPrefix speak to tfk8s: they move the step but
// are not among a record's scalars. A program that writes no summary at each step
// (Keras's callback writes one an epoch) writes tfk8s/step to say how far it got.
const OwnTagPrefix = "tfk8s/"

// TotalStepsTag is the scalar by which a program says at which step training ends:
// tf.summary.scalar("tfk8s/total_steps", total, step=...). Its last value counts.
const TotalStepsTag = OwnTagPrefix + "total_steps"

// totalSteps reads a TotalStepsTag value: a whole number of at least 1, else 0
// (unknown).
func totalSteps(v float64) int64 {
	if math.IsNaN(v) || v < 1 || v > 1<<53 {
		return 0
	}
	return int64(v)
}

// The step rate is measured over the last paceWindow seconds of the trainer's clock,
// from at most paceSamples increases of the step: recent enough to follow a job that
// slows down, long enough to span a few flushes of its summaries.
const (
	paceWindow  = 60.0
	paceSamples = 64
)

// pace keeps when the step last increased, oldest first.
type pace struct{ samples []paceSample }

type paceSample struct {
	step int64
	wall float64
}

func (p *pace) empty() bool { return len(p.samples) == 0 }

// add notes that step was reached at wall, dropping the samples that no longer count:
// those before the window and beyond paceSamples, while two are left to measure by.
func (p *pace) add(step int64, wall float64) {
	p.samples = append(p.samples, paceSample{step, wall})
	for len(p.samples) > 2 && (len(p.samples) > paceSamples || p.samples[0].wall < wall-paceWindow) {
		p.samples = p.samples[1:]
	}
}

// rate is the steps per second between the oldest sample kept and the newest; 0 when
// there are fewer than two, or the clock did not advance between them.
func (p *pace) rate() float64 {
	if len(p.samples) < 2 {
		return 0
	}
	first, last := p.samples[0], p.samples[len(p.samples)-1]
	dt := last.wall - first.wall
	if dt <= 0 || last.step <= first.step {
		return 0
	}
	return float64(last.step-first.step) / dt
}
