package cli

import "time"

// Tracer is told when each step of a command began and how long it took: the
// benchmarks trace submit with it, to find where a job's start goes before the TFJob
// exists. Steps are named for what they wait on: "creator review", "check", …
type Tracer func(step string, start time.Time, took time.Duration)

// step starts timing a step for Env.Trace; the func it returns ends it. Without a
// tracer it costs nothing.
func (o *rootOptions) step(name string) func() {
	if o.env.Trace == nil {
		return func() {}
	}
	start := time.Now()
	return func() { o.env.Trace(name, start, time.Since(start)) }
}
