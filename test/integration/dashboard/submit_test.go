package dashboard

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// fillForm types the fields of a form, by id; "check" ticks a checkbox.
func fillForm(t *testing.T, ctx context.Context, fields map[string]string) {
	t.Helper()
	var actions []chromedp.Action[chromedp.Void]
	for id, v := range fields {
		if v == "check" {
			actions = append(actions, chromedp.Click(chromedp.ID(id)))
			continue
		}
		actions = append(actions, chromedp.SetValue(chromedp.ID(id), v))
	}
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("filling the form: %v", err)
	}
}

// value is the value of the first form field matching selector (CSS), "" if none does.
func value(ctx context.Context, selector string) (string, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {value: ""}).value`, selector)))
}

// replicaCounts are a job's replicas by type, and the image of each type.
func replicaCounts(job *tfv1.TFJob) map[string]string {
	out := map[string]string{}
	for rt, spec := range job.Spec.TFReplicaSpecs {
		c := tfjob.TensorFlowContainer(spec.Template.Spec.Containers)
		out[string(rt)] = fmt.Sprintf("%d %s %q", tfjob.Replicas(spec), c.Image, c.Command)
	}
	return out
}

// jobAbsent reports whether the job does not exist.
func jobAbsent(t *testing.T, ns, name string) bool {
	t.Helper()
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &tfv1.TFJob{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return apierrors.IsNotFound(err)
}

// TestSubmitFormCreatesJob: the form's server-side dry run shows the job the API
// server would create and creates nothing; Create creates it with the replicas
// asked for, goes to its page, is audited, and the controller gives it its pods.
func TestSubmitFormCreatesJob(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	base, audit := startDashboard(t, ns)
	ctx := browser.Start(t)

	if err := browser.Open(ctx, base+"/jobs?namespace="+ns, "#nav-submit"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("nav-submit")), chromedp.WaitVisible(chromedp.ID("name"))); err != nil {
		t.Fatal(err)
	}
	fillForm(t, ctx, map[string]string{
		"name": "from-form", "image": "tensorflow/tensorflow:2.16.1", "command": "python3 train.py --epochs 3",
		"ps": "1", "workers": "2", "chief": "check", "cpu": "500m", "env": "EPOCHS=3\nBATCH=64",
	})
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("dry-run"))); err != nil {
		t.Fatal(err)
	}
	if text, err := browser.WaitText(ctx, "#dry-run-result", "replicas: 2", wait); err != nil {
		t.Fatalf("the dry run shows no job: %v (%q)", err, text)
	}
	if !jobAbsent(t, ns, "from-form") {
		t.Fatal("the dry run created the job")
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("create"))); err != nil {
		t.Fatal(err)
	}
	if _, err := browser.WaitText(ctx, "#job-name", "from-form", wait); err != nil {
		t.Fatalf("Create did not lead to the job's page: %v", err)
	}
	job := getJob(t, ns, "from-form")
	want := map[string]string{
		"Chief":  `1 tensorflow/tensorflow:2.16.1 ["python3" "train.py" "--epochs" "3"]`,
		"PS":     `1 tensorflow/tensorflow:2.16.1 ["python3" "train.py" "--epochs" "3"]`,
		"Worker": `2 tensorflow/tensorflow:2.16.1 ["python3" "train.py" "--epochs" "3"]`,
	}
	if d := cmp.Diff(want, replicaCounts(job)); d != "" {
		t.Errorf("the job's replicas (-want +got):\n%s", d)
	}
	if c := tfjob.TensorFlowContainer(job.Spec.TFReplicaSpecs["Worker"].Template.Spec.Containers); c.Resources.Limits.Cpu().String() != "500m" || len(c.Env) < 2 {
		t.Errorf("the worker's container lacks --cpu 500m or the env: %+v %v", c.Resources, c.Env)
	}
	waitPods(t, ns, "from-form", "from-form-chief-0", "from-form-ps-0", "from-form-worker-0", "from-form-worker-1")
	if want := fmt.Sprintf(`audit: user="kubeconfig" action=create tfjob=%s/from-form`, ns); !strings.Contains(audit.String(), want) {
		t.Errorf("the audit log lacks %q:\n%s", want, audit.String())
	}
}

// TestSubmitShowsTheAPIServersObjections: a value the API server refuses (the CLI
// lets it through) shows the server's objection with its field path, keeps what was
// typed, and creates nothing; a value the CLI refuses names the flag.
func TestSubmitShowsTheAPIServersObjections(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)
	for _, tc := range []struct {
		name   string
		fields map[string]string
		yaml   string
		want   string
	}{
		{name: "too-many", fields: map[string]string{"workers": "100001"}, want: "spec.tfReplicaSpecs.Worker.replicas"},
		{name: "no-summaries", fields: map[string]string{"tensorboard": "check"}, want: "spec.tensorboard: Invalid value: TensorBoard has no summaries to read"},
		{name: "bad-memory", fields: map[string]string{"memory": "lots"}, want: `--memory "lots": not a quantity`},
		{name: "bad-policy", yaml: "apiVersion: tfk8s.io/v1alpha1\nkind: TFJob\nmetadata:\n  name: bad-policy\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 1\n      restartPolicy: Sometimes\n      template:\n        spec:\n          containers:\n          - name: tensorflow\n            image: busybox\n",
			want: `spec.tfReplicaSpecs.Worker.restartPolicy: Unsupported value: "Sometimes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.yaml != "" {
				if err := browser.Open(ctx, base+"/submit?mode=yaml&namespace="+ns, "#yaml"); err != nil {
					t.Fatal(err)
				}
				fillForm(t, ctx, map[string]string{"yaml": tc.yaml})
			} else {
				if err := browser.Open(ctx, base+"/submit?namespace="+ns, "#name"); err != nil {
					t.Fatal(err)
				}
				tc.fields["name"], tc.fields["image"] = tc.name, "busybox"
				fillForm(t, ctx, tc.fields)
			}
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("create"))); err != nil {
				t.Fatal(err)
			}
			text, err := browser.WaitText(ctx, "#errors", tc.want, wait)
			if err != nil {
				t.Fatalf("the page does not show %q: %v (%q)", tc.want, err, text)
			}
			t.Logf("shown: %q", text)
			if !jobAbsent(t, ns, tc.name) {
				t.Error("the refused job was created")
			}
			if tc.yaml == "" {
				if v, _ := value(ctx, "#name"); v != tc.name {
					t.Errorf("the form lost the name: %q", v)
				}
			}
		})
	}
}

// TestCloneAndEdit: a past job's Clone fills the form and the YAML with it under a
// new name; edited, the YAML creates the new job.
func TestCloneAndEdit(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	createJob(t, testutil.MakeTFJob("mnist", ns).PS(1).Workers(3).Obj())
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)

	if err := browser.Open(ctx, base+"/jobs/"+ns+"/mnist", "#clone-link"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("clone-link")), chromedp.WaitVisible(chromedp.ID("name"))); err != nil {
		t.Fatal(err)
	}
	old := getJob(t, ns, "mnist")
	want := map[string]string{"#name": "mnist-2", "#ps": "1", "#workers": "3",
		"#image": tfjob.TensorFlowContainer(old.Spec.TFReplicaSpecs["Worker"].Template.Spec.Containers).Image}
	got := map[string]string{}
	for id := range want {
		got[id], _ = value(ctx, id)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the cloned form (-want +got):\n%s", d)
	}
	if err := browser.Screenshot(ctx, base+"/submit?namespace="+ns+"&clone=mnist", "#name", screenshotPath(t, "dashboard-submit.png")); err != nil {
		t.Error(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("tab-yaml")), chromedp.WaitVisible(chromedp.ID("yaml"))); err != nil {
		t.Fatal(err)
	}
	yaml, _ := value(ctx, "#yaml")
	for _, s := range []string{"name: mnist-2", "replicas: 3", "PS:"} {
		if !strings.Contains(yaml, s) {
			t.Errorf("the cloned YAML lacks %q:\n%s", s, yaml)
		}
	}
	fillForm(t, ctx, map[string]string{"yaml": strings.Replace(yaml, "replicas: 3", "replicas: 4", 1)})
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("create"))); err != nil {
		t.Fatal(err)
	}
	if _, err := browser.WaitText(ctx, "#job-name", "mnist-2", wait); err != nil {
		t.Fatalf("Create did not lead to the clone's page: %v", err)
	}
	if n := tfjob.Replicas(getJob(t, ns, "mnist-2").Spec.TFReplicaSpecs["Worker"]); n != 4 {
		t.Errorf("the clone has %d workers, want the 4 of the edited YAML", n)
	}
}
