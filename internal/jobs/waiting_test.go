package jobs

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestUnsaid: a follower says each wait once per container and reason, whatever its
// message, across polls.
func TestUnsaid(t *testing.T) {
	pull := func(container, msg string) tfjob.Wait {
		return tfjob.Wait{Container: container, Reason: "ErrImagePull", Message: msg}
	}
	polls := []struct {
		waits, want []tfjob.Wait
	}{
		{[]tfjob.Wait{pull("init", "a")}, []tfjob.Wait{pull("init", "a")}},
		{[]tfjob.Wait{pull("init", "b"), pull("tensorflow", "c")}, []tfjob.Wait{pull("tensorflow", "c")}},
		{[]tfjob.Wait{{Container: "tensorflow", Reason: "ImagePullBackOff"}}, []tfjob.Wait{{Container: "tensorflow", Reason: "ImagePullBackOff"}}},
		{[]tfjob.Wait{pull("tensorflow", "d")}, nil},
	}
	said := map[tfjob.Wait]bool{}
	for i, p := range polls {
		if diff := cmp.Diff(p.want, Unsaid(said, p.waits)); diff != "" {
			t.Errorf("poll %d: said (-want +got):\n%s", i, diff)
		}
	}
}
