package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestRefusalWarnedWhenTheStatusWriteFails: the API server refuses the job's pod, and
// then the status write fails too. The refusal's warning is emitted all the same:
// the next reconcile waits out the refusal's backoff rather than trying again, so it
// would not say it.
func TestRefusalWarnedWhenTheStatusWriteFails(t *testing.T) {
	job := testutil.MakeTFJob("j", "ns").UID("uid-j").Workers(1).Obj()
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(job).
		WithStatusSubresource(&tfv1.TFJob{}).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, obj.GetName(), errors.New("exceeded quota: q"))
			}
			return c.Create(ctx, obj, opts...)
		},
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return errors.New("etcdserver: request timed out")
		},
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return errors.New("etcdserver: request timed out")
		},
	})
	rec := events.NewFakeRecorder(10)
	r := NewTFJobReconciler(c, rec, Options{})
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)})
	if err == nil || !strings.Contains(err.Error(), "writing status") {
		t.Fatalf("Reconcile = %v, want the status write's error", err)
	}
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	for _, e := range got {
		if strings.HasPrefix(e, corev1.EventTypeWarning+" "+tfv1.ReasonPodCreationFailed+" ") && strings.Contains(e, "exceeded quota: q") {
			return
		}
	}
	t.Errorf("events %q; want a %s warning with the API server's refusal", got, tfv1.ReasonPodCreationFailed)
}
