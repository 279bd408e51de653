package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tfk8s/tfk8s/internal/dashboard"
	"github.com/tfk8s/tfk8s/internal/jobspec"
)

// TestRenderEqualsTheDashboardForm: the same parameters give byte for byte the same
// TFJob through tfk8s render's flags and through the dashboard's submit form.
func TestRenderEqualsTheDashboardForm(t *testing.T) {
	for _, tc := range []struct {
		name string
		args string
		form map[string]string
	}{{
		name: "defaults",
		args: "--name mnist --image tf",
		form: map[string]string{"name": "mnist", "image": "tf"},
	}, {
		name: "every field of the form",
		args: "--name mnist --image tf:2.16 --ps 2 --workers 3 --chief --evaluator --gpus 1 --cpu 500m --memory 2Gi " +
			"--restart-policy OnFailure --backoff-limit 2 --active-deadline 2h --ttl-after-finished 24h --clean-pod-policy All " +
			"--tensorboard --env A=1 --env B=x=y --volume name=logs,mount=/logs,size=1Gi --volume name=data,mount=/data,existing=pvc,readOnly",
		form: map[string]string{"name": "mnist", "image": "tf:2.16", "ps": "2", "workers": "3", "chief": "true", "evaluator": "true",
			"gpus": "1", "cpu": "500m", "memory": "2Gi", "restart-policy": "OnFailure", "backoff-limit": "2", "active-deadline": "2h",
			"ttl-after-finished": "24h", "clean-pod-policy": "All", "tensorboard": "true", "env": "A=1\nB=x=y",
			"volume": "name=logs,mount=/logs,size=1Gi\nname=data,mount=/data,existing=pvc,readOnly"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			env := Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
				Getenv: func(string) string { return "" }}
			args := append(append([]string{"render", "-n", "team"}, strings.Fields(tc.args)...), "--", "python3", "train.py", "--epochs", "3")
			if code := Main(context.Background(), args, env); code != 0 {
				t.Fatalf("tfk8s %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
			}
			job, err := dashboard.FormJob(dashboard.SubmitRequest{Namespace: "team", Flags: tc.form, Command: "python3 train.py --epochs 3"})
			if err != nil {
				t.Fatal(err)
			}
			form, err := jobspec.YAML(job)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(out.String(), string(form)); d != "" {
				t.Errorf("render (-) and the form (+):\n%s", d)
			}
		})
	}
}
