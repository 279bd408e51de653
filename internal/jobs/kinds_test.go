package jobs

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/scheme"
)

// TestGetReads: Get finds the job a reference names with as few reads as it can,
// since the dashboard polls it: Kubeflow's kind is read only after the tfk8s.io read
// found nothing, and never where the API server does not serve it.
func TestGetReads(t *testing.T) {
	own := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "own"}}
	kf := &kubeflowv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kf"}}
	same := &kubeflowv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "own"}}
	for _, tc := range []struct {
		name     string
		served   bool
		ref      string
		want     string // the ref of the job read, "" when not found
		wantRead []string
	}{
		{"tfk8s.io job beside a kubeflow.org one of its name", true, "own", "own", []string{"tfk8s.io"}},
		{"kubeflow.org job by name", true, "kf", "kubeflow.org/kf", []string{"tfk8s.io", "kubeflow.org"}},
		{"kubeflow.org job by ref", true, "kubeflow.org/own", "kubeflow.org/own", []string{"kubeflow.org"}},
		{"tfk8s.io job by ref", true, "tfk8s.io/own", "own", []string{"tfk8s.io"}},
		{"missing, kubeflow.org served", true, "none", "", []string{"tfk8s.io", "kubeflow.org"}},
		{"missing, kubeflow.org not served", false, "none", "", []string{"tfk8s.io"}},
		{"kubeflow.org ref, not served", false, "kubeflow.org/kf", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var read []string
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithRESTMapper(mapper(tc.served)).
				WithObjects(own, kf, same).
				WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					gvk, err := c.GroupVersionKindFor(obj)
					if err != nil {
						return err
					}
					read = append(read, gvk.Group)
					return c.Get(ctx, key, obj, opts...)
				}}).Build()
			job, err := Get(context.Background(), c, "ns", tc.ref)
			got := ""
			if err == nil {
				got = RefOf(job)
			} else if !apierrors.IsNotFound(err) {
				t.Fatalf("Get(%q): %v", tc.ref, err)
			}
			if got != tc.want {
				t.Errorf("Get(%q) read %q, want %q", tc.ref, got, tc.want)
			}
			if diff := cmp.Diff(tc.wantRead, read); diff != "" {
				t.Errorf("Get(%q) read the groups (-want +got):\n%s", tc.ref, diff)
			}
		})
	}
}

// mapper is a RESTMapper that knows tfk8s.io's TFJob, and Kubeflow's when served.
func mapper(kubeflowServed bool) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{tfv1.GroupVersion})
	m.Add(tfv1.GroupVersion.WithKind("TFJob"), meta.RESTScopeNamespace)
	if kubeflowServed {
		m.Add(kubeflowv1.GroupVersion.WithKind("TFJob"), meta.RESTScopeNamespace)
	}
	return m
}
