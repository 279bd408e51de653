package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

func TestParseWaitFor(t *testing.T) {
	cases := []struct {
		in      string
		want    waitTarget
		wantErr bool
	}{
		{in: "condition=Succeeded", want: waitTarget{condition: tfv1.JobSucceeded}},
		{in: "condition=failed", want: waitTarget{condition: tfv1.JobFailed}},
		{in: "condition=Running=True", want: waitTarget{condition: tfv1.JobRunning}},
		{in: "delete", want: waitTarget{deletion: true}},
		{in: "condition=Done", wantErr: true},
		{in: "Succeeded", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseWaitFor(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseWaitFor(%q) error = %v, want error: %t", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(waitTarget{})); diff != "" {
				t.Errorf("parseWaitFor(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestWaitDone(t *testing.T) {
	job := func(conds ...tfv1.JobState) *tfv1.TFJob {
		j := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Name: "mnist"}}
		for _, c := range conds {
			j.Status.Conditions = append(j.Status.Conditions, metav1.Condition{Type: string(c), Status: metav1.ConditionTrue, Message: "worker-1 exited 3"})
		}
		return j
	}
	cases := []struct {
		name     string
		job      *tfv1.TFJob
		want     tfv1.JobState
		done     bool
		wantErr  string
		exitCode int
	}{
		{name: "running, waiting to finish", job: job(tfv1.JobCreated, tfv1.JobRunning), want: finished},
		{name: "succeeded, waiting to finish", job: job(tfv1.JobSucceeded), want: finished, done: true},
		{name: "failed, waiting to finish", job: job(tfv1.JobFailed), want: finished, done: true, wantErr: "tfjob mnist failed: worker-1 exited 3", exitCode: 1},
		{name: "running, waiting for Running", job: job(tfv1.JobRunning), want: tfv1.JobRunning, done: true},
		{name: "failed, waiting for Succeeded", job: job(tfv1.JobFailed), want: tfv1.JobSucceeded, done: true, wantErr: "tfjob mnist failed, so it will never be Succeeded: worker-1 exited 3", exitCode: 1},
		{name: "succeeded, waiting for Failed", job: job(tfv1.JobSucceeded), want: tfv1.JobFailed, done: true, wantErr: "tfjob mnist succeeded, so it will never be Failed", exitCode: 1},
		{name: "created, waiting for Suspended", job: job(tfv1.JobCreated), want: tfv1.JobSuspended},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done, err := waitDone(tc.job, tc.want)
			if done != tc.done {
				t.Errorf("done = %t, want %t", done, tc.done)
			}
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("error = %q, want %q", gotErr, tc.wantErr)
			}
			if exit, ok := err.(*ExitError); ok && exit.Code != tc.exitCode {
				t.Errorf("exit code = %d, want %d", exit.Code, tc.exitCode)
			}
		})
	}
}
