package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestServiceNameTakenFailsTheJob: a Service of the job's name that is not the job's,
// whoever made it, fails the job with ServiceNameTaken and a message naming the
// Service and its owner; the Service is left as it was.
func TestServiceNameTakenFailsTheJob(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	ctx := context.Background()
	startController(t)
	holder := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "holder", Namespace: ns}}
	if err := k8sClient.Create(ctx, holder); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		owner *metav1.OwnerReference
		// labelled Services are in the controller's cache; others it reads only when
		// creating its own fails.
		labels    map[string]string
		wantOwner string
	}{
		{name: "by hand", wantOwner: "belongs to no owner (written by "},
		{name: "owned", owner: metav1.NewControllerRef(holder, corev1.SchemeGroupVersion.WithKind("ConfigMap")),
			labels: map[string]string{tfv1.LabelJobName: "owned"}, wantOwner: "belongs to ConfigMap holder,"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: tc.labels},
				Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
			}
			if tc.owner != nil {
				svc.OwnerReferences = []metav1.OwnerReference{*tc.owner}
			}
			if err := k8sClient.Create(ctx, svc); err != nil {
				t.Fatal(err)
			}
			job := testutil.MakeTFJob(name, ns).PS(1).Workers(1).Obj()
			if err := k8sClient.Create(ctx, job); err != nil {
				t.Fatal(err)
			}
			failed := findJobCondition(waitCondition(t, ns, name, tfv1.JobFailed), tfv1.JobFailed)
			wantStart := fmt.Sprintf("Service %s/%s already exists and %s", ns, name, tc.wantOwner)
			if failed.Reason != tfv1.ReasonServiceNameTaken || !strings.HasPrefix(failed.Message, wantStart) {
				t.Errorf("Failed: reason %s, message %q; want %s, starting %q", failed.Reason, failed.Message, tfv1.ReasonServiceNameTaken, wantStart)
			}
			if msg := eventMessage(t, ns, job.UID, tfv1.ReasonServiceNameTaken); msg != failed.Message {
				t.Errorf("%s event %q, want the condition's message", tfv1.ReasonServiceNameTaken, msg)
			}
			after := &corev1.Service{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(svc), after); err != nil || after.UID != svc.UID || metav1.IsControlledBy(after, job) {
				t.Errorf("the Service that held the name: %v, UID %s, owners %v; want it left as it was", err, after.UID, after.OwnerReferences)
			}
		})
	}
}
