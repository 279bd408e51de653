package proc

import (
	"context"
	"slices"
	"time"
)

// Group is what one start-up brought up, in order: the processes it started and those
// it adopted, found running. A start-up that fails stops what it started and leaves
// what it adopted alone, since that belongs to a cluster that was already running.
type Group struct {
	members []member
}

// member is one process of a Group.
type member struct {
	p       *Process
	adopted bool
}

// Add records a process the start-up started.
func (g *Group) Add(p *Process) { g.members = append(g.members, member{p: p}) }

// Adopt records a process the start-up found running.
func (g *Group) Adopt(p *Process) { g.members = append(g.members, member{p: p, adopted: true}) }

// Adopted reports whether the process name was found running rather than started.
func (g *Group) Adopted(name string) bool {
	return slices.ContainsFunc(g.members, func(m member) bool { return m.adopted && m.p.name == name })
}

// Find returns the newest process named name, or nil.
func (g *Group) Find(name string) *Process {
	for _, m := range slices.Backward(g.members) {
		if m.p.name == name {
			return m.p
		}
	}
	return nil
}

// Check returns the exit error of the first process that has ended, or nil.
func (g *Group) Check() error {
	for _, m := range g.members {
		if m.p.Exited() {
			return m.p.ExitError()
		}
	}
	return nil
}

// Stop stops every process, newest first, each within grace, and empties the group.
func (g *Group) Stop(grace time.Duration) {
	for _, m := range slices.Backward(g.members) {
		_ = m.p.Stop(grace)
	}
	g.members = nil
}

// StopStarted stops the processes the start-up started, each within grace of its
// name, and empties the group. Those named in order go first, in that order, the rest
// newest first: a cluster stops what depends on the others before them.
func (g *Group) StopStarted(grace func(name string) time.Duration, order ...string) {
	var started []*Process
	for _, m := range slices.Backward(g.members) {
		if !m.adopted {
			started = append(started, m.p)
		}
	}
	rank := func(p *Process) int {
		if i := slices.Index(order, p.name); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(started, func(a, b *Process) int { return rank(a) - rank(b) })
	for _, p := range started {
		_ = p.Stop(grace(p.name))
	}
	g.members = nil
}

// RunSteps runs the steps of a start-up in order and stops at the first that fails;
// then it calls undo, which stops what the start-up started, and returns the error.
func RunSteps(ctx context.Context, undo func(), steps ...func(context.Context) error) error {
	for _, step := range steps {
		if err := step(ctx); err != nil {
			undo()
			return err
		}
	}
	return nil
}
