package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
)

func TestObjections(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "tfk8s.io", Kind: "TFJob"}, "mnist", field.ErrorList{
		field.Invalid(field.NewPath("spec", "tfReplicaSpecs", "Worker", "replicas"), 100001, "should be less than or equal to 100000"),
		field.NotSupported(field.NewPath("spec", "runPolicy", "cleanPodPolicy"), "Some", []string{"All", "Running", "None"}),
	})
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"the API server's causes, with their field paths", fmt.Errorf("creating tfjob mnist: %w", invalid), []string{
			"spec.tfReplicaSpecs.Worker.replicas: Invalid value: 100001: should be less than or equal to 100000",
			`spec.runPolicy.cleanPodPolicy: Unsupported value: "Some": supported values: "All", "Running", "None"`,
		}},
		{"an error of the CLI's", errors.New(`--cpu "x": not a quantity`), []string{`--cpu "x": not a quantity`}},
	} {
		if d := cmp.Diff(tc.want, objections(tc.err)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// TestSubmitPageTabs: the submit page renders its form and its YAML tab without
// asking the cluster; a clone asks it, and its error is the page's.
func TestSubmitPageTabs(t *testing.T) {
	s, _ := newTestServer(t, false)
	for _, tc := range []struct {
		target string
		code   int
		want   string
	}{
		{"/submit?namespace=a", http.StatusOK, `id="workers" type="number" min="0" value="1"`},
		{"/submit?namespace=a&mode=yaml", http.StatusOK, `<textarea name="yaml" id="yaml"`},
		{"/submit?namespace=a&clone=mnist", http.StatusBadGateway, "the API server is unreachable"},
	} {
		w := serve(s, http.MethodGet, tc.target, "127.0.0.1:8686")
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("GET %s: %d, want %d with %q:\n%s", tc.target, w.Code, tc.code, tc.want, w.Body.String())
		}
	}
}

// yamlOnly clones every job as YAML alone, as the CLI clones a job with volumes.
type yamlOnly struct{ unreachable }

func (yamlOnly) Clone(_ context.Context, ns, name string) (*SubmitRequest, error) {
	return &SubmitRequest{Namespace: ns, YAML: "metadata:\n  name: " + name + "-2\n"}, nil
}

// TestCloneWithoutFlagsOpensTheYAML: a clone the form cannot say opens in the YAML
// tab; its form tab says why it is empty.
func TestCloneWithoutFlagsOpensTheYAML(t *testing.T) {
	s, err := New(Options{Config: &rest.Config{Host: "https://127.0.0.1:1"},
		NewCluster: func(*rest.Config, string) (Cluster, error) { return yamlOnly{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ target, want string }{
		{"/submit?namespace=a&clone=mnist", "name: mnist-2\n</textarea>"},
		{"/submit?namespace=a&clone=mnist&mode=form", `id="clone-note"`},
	} {
		w := serve(s, http.MethodGet, tc.target, "127.0.0.1:8686")
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("GET %s: %d, want 200 with %q:\n%s", tc.target, w.Code, tc.want, w.Body.String())
		}
	}
}

// submitted records the requests the submit form sends, and accepts them.
type submitted struct {
	unreachable
	reqs []SubmitRequest
}

func (c *submitted) Submit(_ context.Context, req SubmitRequest) (*Submitted, error) {
	c.reqs = append(c.reqs, req)
	return &Submitted{Namespace: req.Namespace, Name: req.Flags["name"], YAML: "kind: TFJob\n"}, nil
}

// TestSubmitFormSendsEveryField: every field the form shows reaches the cluster's
// Submit, --active-deadline and --resume-from too, which the form once dropped.
func TestSubmitFormSendsEveryField(t *testing.T) {
	c := &submitted{}
	s := newRecordingServer(t, c, Options{})
	form := "namespace=a&mode=form&action=dryrun&name=mnist&image=tf&command=python3+t.py" +
		"&active-deadline=2h&resume-from=mnist-1&ttl-after-finished=24h&env=A%3D1"
	if w := post(s, "/submit", form, "127.0.0.1:40000"); w.Code != http.StatusOK {
		t.Fatalf("POST /submit: %d:\n%s", w.Code, w.Body.String())
	}
	if len(c.reqs) != 1 {
		t.Fatalf("%d requests submitted, want 1", len(c.reqs))
	}
	want := map[string]string{"name": "mnist", "image": "tf", "active-deadline": "2h", "resume-from": "mnist-1",
		"ttl-after-finished": "24h", "env": "A=1"}
	if d := cmp.Diff(want, c.reqs[0].Flags); d != "" {
		t.Errorf("the form's fields (-want +got):\n%s", d)
	}
}
