package jobs

import "github.com/tfk8s/tfk8s/internal/tfjob"

// Unsaid returns the waits not yet in said, and adds them: a follower says each once
// per container and reason, so an init container's failed pull does not hide the
// same reason on the main container, nor repeat every poll.
func Unsaid(said map[tfjob.Wait]bool, waits []tfjob.Wait) []tfjob.Wait {
	var fresh []tfjob.Wait
	for _, w := range waits {
		key := tfjob.Wait{Container: w.Container, Reason: w.Reason}
		if !said[key] {
			said[key] = true
			fresh = append(fresh, w)
		}
	}
	return fresh
}
