//go:build linux

package examples

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestParameterServerStrategyInImage trains ps_strategy.py in the TensorFlow image with
// a chief, a parameter server, two workers and an evaluator; kills the chief after its
// second epoch is saved and starts it again, and checks it resumes from that epoch.
func TestParameterServerStrategyInImage(t *testing.T) {
	root := imageRoot(t, "tensorflow")
	ctx, cancel := context.WithTimeout(context.Background(), tfTimeout)
	defer cancel()
	start := time.Now()
	c := newCluster(t, ctx, root, "ps_strategy.py", map[string]int{"chief": 1, "ps": 1, "worker": 2},
		"--epochs=4", "--steps-per-epoch=10")
	for _, task := range []struct {
		job   string
		index int
	}{{"ps", 0}, {"worker", 0}, {"worker", 1}, {"chief", 0}, {"evaluator", 0}} {
		c.start(task.job, task.index)
	}
	c.waitFor("chief-0", "[chief] epoch 2 saved in ")
	c.kill("chief-0")
	killed := time.Since(start)
	// The chief may have saved another epoch between the line the test saw and the
	// kill: it resumes from the last one it saved.
	saved := lastSavedEpoch(c.output("chief-0"))
	c.start("chief", 0)
	c.wait("chief-0")
	c.wait("evaluator-0")
	t.Logf("chief killed after epoch %d at %v, the job trained 4 epochs in %v", saved, killed.Round(time.Second), time.Since(start).Round(time.Second))

	c.requireLines("chief-0",
		`[chief] cluster {"chief": 1, "ps": 1, "worker": 2}`,
		"[chief] coordinator connected: 2 workers, 1 parameter servers",
		"[chief] starting from step 0",
		"[chief] training finished at step 40")
	// The restarted chief resumes from the last checkpoint saved: the one it said it
	// saved, or the next if the kill came between saving and saying so.
	m := regexp.MustCompile(`\[chief\] resuming from step (\d+) \(epoch (\d+)\)`).FindStringSubmatch(c.output("chief-0"))
	if m == nil {
		t.Fatalf("the restarted chief did not resume from a checkpoint:\n%s", c.output("chief-0"))
	}
	step, _ := strconv.Atoi(m[1])
	epoch, _ := strconv.Atoi(m[2])
	if (epoch != saved && epoch != saved+1) || step != epoch*10 {
		t.Errorf("the chief resumed from step %d (epoch %d); killed after saving epoch %d, want epoch %d (or %d) at step 10 per epoch", step, epoch, saved, saved, saved+1)
	}
	for _, task := range []string{"ps-0", "worker-0", "worker-1"} {
		c.requireLines(task, "] server started at grpc://127.0.0.1:", ` in cluster {"chief": 1, "ps": 1, "worker": 2}`)
	}
	c.requireLines("evaluator-0", "[evaluator] evaluated a checkpoint: loss ", "[evaluator] evaluated the last checkpoint")
	t.Logf("chief:\n%s", c.output("chief-0"))
}

// TestMultiWorkerMirroredInImage trains multi_worker_mirrored.py in the TensorFlow image
// with two workers.
func TestMultiWorkerMirroredInImage(t *testing.T) {
	root := imageRoot(t, "tensorflow")
	ctx, cancel := context.WithTimeout(context.Background(), tfTimeout)
	defer cancel()
	start := time.Now()
	c := newCluster(t, ctx, root, "multi_worker_mirrored.py", map[string]int{"worker": 2},
		"--epochs=2", "--steps-per-epoch=10")
	c.start("worker", 0)
	c.start("worker", 1)
	c.wait("worker-0")
	c.wait("worker-1")
	t.Logf("2 workers trained 2 epochs in %v", time.Since(start).Round(time.Second))

	for _, task := range []string{"worker-0", "worker-1"} {
		c.requireLines(task, `joined the cluster {"worker": 2}: 2 replicas in sync`, "starting from step 0",
			"training finished at step 20")
	}
	c.requireLines("worker-0", "[worker 0] epoch 2 step 20 loss ", "[worker 0] saved the model to /runs/TestMultiWorkerMirroredInImage/model")
	t.Logf("worker 0:\n%s", c.output("worker-0"))
}

// savedEpoch matches the chief's line once an epoch's checkpoint is saved.
var savedEpoch = regexp.MustCompile(`\[chief\] epoch (\d+) saved in `)

// lastSavedEpoch is the last epoch the chief's output says it saved, or 0.
func lastSavedEpoch(output string) int {
	last := 0
	for _, m := range savedEpoch.FindAllStringSubmatch(output, -1) {
		last, _ = strconv.Atoi(m[1])
	}
	return last
}
