package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// pacedKeras runs examples/tensorflow/multi_worker_mirrored.py, whose callback tells
// tfk8s the total steps, at a pace the controller's 30-second polls can follow: 0.2 s
// a step.
const pacedKeras = `import time
import multi_worker_mirrored as mwm

class Pace(mwm.keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        time.sleep(0.2)

fit = mwm.keras.Model.fit
mwm.keras.Model.fit = lambda self, *a, callbacks=None, **kw: fit(self, *a, callbacks=list(callbacks or []) + [Pace()], **kw)
mwm.main()
`

// progressRow is what kubectl get tfjobs prints of a job: its printer columns.
type progressRow struct {
	State                string
	Step, Progress, ETA  *int64
	StepsPerSecondSeries bool // tfk8s_job_steps_per_second has the job's series
}

// testProgress runs a Keras job of known length (400 steps) and watches it as kubectl
// get tfjobs does, through the API server's Table of the job's printer columns: STEP
// and PROGRESS move, ETA falls, and the controller's steps-per-second gauge has the
// job's series while it runs and none soon after it has succeeded, as it must.
func testProgress(ctx context.Context, t *testing.T, c *jobsCluster, metricsPort int) {
	dir := t.TempDir()
	example, err := os.ReadFile("../../examples/tensorflow/multi_worker_mirrored.py")
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(dir, "multi_worker_mirrored.py"), string(example))
	testutil.WriteFile(t, filepath.Join(dir, "paced.py"), pacedKeras)
	start := time.Now()
	c.mustTfk8s(ctx, t, "submit", dir, "--name", "progress", "--image", images.TensorFlow,
		"--workers", "1", "--artifacts", "checkpoints", "--artifacts-interval", "5s",
		"--", "python3", "paced.py", "--epochs", "10", "--steps-per-epoch", "40", "--model-dir", "/workspace/checkpoints")
	defer c.tfk8s(ctx, "delete", "progress")

	var seen []progressRow
	c.eventually(ctx, t, "progress finished", func() (bool, error) {
		row, err := c.printerColumns(ctx, "progress")
		if err != nil {
			return false, err
		}
		if row.State == string(tfv1.JobRunning) && row.Step != nil {
			row.StepsPerSecondSeries, err = hasJobSeries(metricsPort, "progress")
			if err != nil {
				return false, err
			}
		}
		if len(seen) == 0 || fmt.Sprint(seen[len(seen)-1]) != fmt.Sprint(row) {
			seen = append(seen, row)
			t.Logf("+%v: %s", time.Since(start).Round(time.Second), row)
		}
		return row.State == string(tfv1.JobSucceeded) || row.State == string(tfv1.JobFailed), nil
	})
	// The wait ends on failure too, so as not to sit out its time: the job must have
	// succeeded, or its progress was not a whole run's.
	if last := seen[len(seen)-1]; last.State != string(tfv1.JobSucceeded) {
		t.Fatalf("the job ended %s, want %s:\n%v", last.State, tfv1.JobSucceeded, seen)
	}
	checkProgressMoved(t, seen)
	// The gauge reads the controller's cache, which may see the final state a moment
	// after the API server did: wait, bounded, for the series to go.
	c.eventually(ctx, t, "tfk8s_job_steps_per_second to drop the finished job's series", func() (bool, error) {
		has, err := hasJobSeries(metricsPort, "progress")
		return err == nil && !has, err
	})
}

// checkProgressMoved wants, among the rows seen while the job ran, two steps and
// percentages that rose, an ETA that fell, and the gauge's series.
func checkProgressMoved(t *testing.T, seen []progressRow) {
	t.Helper()
	var steps, progress, etas []int64
	series := false
	for _, r := range seen {
		if r.State != string(tfv1.JobRunning) || r.Step == nil || r.Progress == nil {
			continue
		}
		steps, progress = append(steps, *r.Step), append(progress, *r.Progress)
		if r.ETA != nil {
			etas = append(etas, *r.ETA)
		}
		series = series || r.StepsPerSecondSeries
	}
	rose := func(v []int64) bool { return len(v) >= 2 && v[len(v)-1] > v[0] }
	fell := func(v []int64) bool { return len(v) >= 2 && v[len(v)-1] < v[0] }
	if !rose(steps) || !rose(progress) || !fell(etas) || !series {
		t.Errorf("while running: steps %v, progress %v, ETAs %v, gauge series %v; want steps and progress rising, the ETA falling, a series:\n%v",
			steps, progress, etas, series, seen)
	}
}

func (r progressRow) String() string {
	v := func(p *int64) string {
		if p == nil {
			return "<none>"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("%s STEP %s PROGRESS %s ETA %s gauge %v", r.State, v(r.Step), v(r.Progress), v(r.ETA), r.StepsPerSecondSeries)
}

// printerColumns reads the job as kubectl get does: a Table of its printer columns.
func (c *jobsCluster) printerColumns(ctx context.Context, name string) (progressRow, error) {
	b, err := c.cs.CoreV1().RESTClient().Get().AbsPath("/apis/tfk8s.io/v1alpha1/namespaces/default/tfjobs", name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		return progressRow{}, err
	}
	var table metav1.Table
	if err := json.Unmarshal(b, &table); err != nil || len(table.Rows) != 1 {
		return progressRow{}, fmt.Errorf("a table of one row: %v\n%s", err, b)
	}
	var row progressRow
	for i, col := range table.ColumnDefinitions {
		cell := table.Rows[0].Cells[i]
		switch col.Name {
		case "State":
			row.State, _ = cell.(string)
		case "Step":
			row.Step = intCell(cell)
		case "Progress":
			row.Progress = intCell(cell)
		case "ETA":
			row.ETA = intCell(cell)
		}
	}
	return row, nil
}

// intCell is an integer column's cell, nil when the job has no value.
func intCell(cell any) *int64 {
	n, ok := cell.(float64)
	if !ok {
		return nil
	}
	v := int64(n)
	return &v
}

// hasJobSeries reports whether the controller's metrics have the job's series of
// tfk8s_job_steps_per_second.
func hasJobSeries(port int, job string) (bool, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "tfk8s_job_steps_per_second{") && strings.Contains(line, `tfjob="`+job+`"`) {
			return true, nil
		}
	}
	return false, nil
}
