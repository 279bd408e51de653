package jobs

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestStampCreator: the job's creator is the user the API server names, whatever the
// manifest or a run record said; when the API server does not answer, the job has
// none, not the record's.
func TestStampCreator(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string
		err    error
		before map[string]string
		want   map[string]string
	}{
		{name: "none before", answer: "system:serviceaccount:team:nb",
			want: map[string]string{tfv1.AnnotationCreator: "system:serviceaccount:team:nb"}},
		{name: "a record's creator replaced", answer: "alice",
			before: map[string]string{tfv1.AnnotationCreator: "system:serviceaccount:team:nb", "note": "kept"},
			want:   map[string]string{tfv1.AnnotationCreator: "alice", "note": "kept"}},
		{name: "no answer", err: errors.New("forbidden"),
			before: map[string]string{tfv1.AnnotationCreator: "system:serviceaccount:team:nb", "note": "kept"},
			want:   map[string]string{"note": "kept"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
					review, ok := obj.(*authenticationv1.SelfSubjectReview)
					if !ok || tc.err != nil {
						return tc.err
					}
					review.Status.UserInfo.Username = tc.answer
					return nil
				},
			}).Build()
			job := testutil.MakeTFJob("j", "team").Workers(1).Obj()
			job.Annotations = tc.before
			StampCreator(context.Background(), c, job)
			if diff := cmp.Diff(tc.want, job.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}
