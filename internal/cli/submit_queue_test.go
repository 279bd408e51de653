package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tfk8s/tfk8s/internal/jobspec"
)

// submit --queue puts the job in a Kueue LocalQueue by Kueue's label, and leaves
// runPolicy.schedulingPolicy.queue (the gang scheduler's) alone.
func TestSubmitQueue(t *testing.T) {
	p, err := parseSubmitFlags(t, "--name", "mnist", "--image", "tf", "--queue", "team-a")
	if err != nil {
		t.Fatal(err)
	}
	job, err := jobspec.Build(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"kueue.x-k8s.io/queue-name": "team-a"}, job.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if sp := job.Spec.RunPolicy.SchedulingPolicy; sp != nil && sp.Queue != "" {
		t.Errorf("schedulingPolicy.queue = %q, want it unset", sp.Queue)
	}

	if _, err := parseSubmitFlags(t, "--name", "mnist", "--image", "tf", "--queue", "team a"); err == nil || !strings.Contains(err.Error(), "--queue") {
		t.Errorf("--queue 'team a': error %v, want one naming --queue", err)
	}
}
