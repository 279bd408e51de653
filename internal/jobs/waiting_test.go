package jobs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUnsaid: a follower says each wait once per container and reason, whatever its
// message, across polls.
func TestUnsaid(t *testing.T) {
	pull := func(container, msg string) Wait {
		return Wait{Container: container, Reason: "ErrImagePull", Message: msg}
	}
	polls := []struct {
		waits, want []Wait
	}{
		{[]Wait{pull("init", "a")}, []Wait{pull("init", "a")}},
		{[]Wait{pull("init", "b"), pull("tensorflow", "c")}, []Wait{pull("tensorflow", "c")}},
		{[]Wait{{Container: "tensorflow", Reason: "ImagePullBackOff"}}, []Wait{{Container: "tensorflow", Reason: "ImagePullBackOff"}}},
		{[]Wait{pull("tensorflow", "d")}, nil},
	}
	said := map[Wait]bool{}
	for i, p := range polls {
		if diff := cmp.Diff(p.want, Unsaid(said, p.waits)); diff != "" {
			t.Errorf("poll %d: said (-want +got):\n%s", i, diff)
		}
	}
}
