package controller

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestResubmitSameNameGetsPods: a job is deleted and at once submitted again under the
// same name, with the controller running and with the controller down in between. The
// old pods still hold the names while their node stops them (a finalizer of the test's
// plays that node), and tfk8s's tracking finalizers would keep them forever; the new
// job must release them, say why its pods wait, and take the names over as soon as the
// old pods are gone, every pod and the Service then owned by the new job.
func TestResubmitSameNameGetsPods(t *testing.T) {
	for _, controllerDown := range []bool{false, true} {
		name := "controller running"
		if controllerDown {
			name = "controller down in between"
		}
		t.Run(name, func(t *testing.T) {
			ns := testutil.Namespace(t, k8sClient)
			ctx := context.Background()
			stop := startController(t)
			all := []string{"same-ps-0", "same-worker-0", "same-worker-1"}
			old := testutil.MakeTFJob("same", ns).PS(1).Workers(2).Obj()
			if err := k8sClient.Create(ctx, old); err != nil {
				t.Fatal(err)
			}
			waitPods(t, ns, "same", all...)
			kubelet.SetRunning(t, ns, all...)
			waitService(t, ns, "same", old.UID)
			for _, name := range all {
				setFinalizers(t, ns, name, append(finalizersOf(t, ns, name), stillStopping))
			}
			if controllerDown {
				stop()
			}

			if err := k8sClient.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
				t.Fatal(err)
			}
			again := testutil.MakeTFJob("same", ns).PS(1).Workers(2).Obj()
			testutil.Eventually(t, "the job to be submitted again", func(ctx context.Context) (bool, error) {
				err := k8sClient.Create(ctx, again.DeepCopy())
				return err == nil, client.IgnoreAlreadyExists(err)
			})
			if controllerDown {
				startController(t)
			}
			current, err := getJob(ctx, ns, "same")
			if err != nil {
				t.Fatal(err)
			}

			if msg := eventMessage(t, ns, current.UID, tfv1.ReasonPodNameTaken); !strings.Contains(msg, "earlier TFJob named same") {
				t.Errorf("%s event %q, want it to name the earlier job", tfv1.ReasonPodNameTaken, msg)
			}
			for _, name := range all {
				testutil.Eventually(t, name+" released by tfk8s", func(ctx context.Context) (bool, error) {
					return slices.Equal(finalizersOf(t, ns, name), []string{stillStopping}), nil
				})
				setFinalizers(t, ns, name, nil) // the node is done: the old pod goes
			}

			testutil.Eventually(t, "the new job's pods", func(ctx context.Context) (bool, error) {
				pods, err := jobPods(ctx, ns, "same")
				if err != nil || len(pods) != len(all) {
					return false, err
				}
				for _, p := range pods {
					if !metav1.IsControlledBy(p, current) || p.DeletionTimestamp != nil {
						return false, nil
					}
				}
				return true, nil
			})
			waitService(t, ns, "same", current.UID)
		})
	}
}

// stillStopping is the finalizer by which the test plays a node still stopping a pod.
const stillStopping = "test.tfk8s.io/still-stopping"

// finalizersOf returns a pod's finalizers, none once it is gone.
func finalizersOf(t *testing.T, ns, name string) []string {
	t.Helper()
	pod := &corev1.Pod{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return pod.Finalizers
}

// setFinalizers sets a pod's finalizers.
func setFinalizers(t *testing.T, ns, name string, finalizers []string) {
	t.Helper()
	testutil.Eventually(t, "the finalizers of "+name, func(ctx context.Context) (bool, error) {
		pod := &corev1.Pod{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			return false, err
		}
		pod.Finalizers = finalizers
		return true, k8sClient.Update(ctx, pod)
	})
}

// waitService waits until the job's Service exists and belongs to the job with uid.
func waitService(t *testing.T, ns, name string, uid types.UID) {
	t.Helper()
	testutil.Eventually(t, "the Service of job "+string(uid), func(ctx context.Context) (bool, error) {
		svc := &corev1.Service{}
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		ref := metav1.GetControllerOf(svc)
		return err == nil && ref != nil && ref.UID == uid && svc.DeletionTimestamp == nil, err
	})
}

// eventMessage waits for an event with reason about the object with uid, and returns
// its message.
func eventMessage(t *testing.T, ns string, uid types.UID, reason string) string {
	t.Helper()
	var msg string
	testutil.Eventually(t, "a "+reason+" event", func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := k8sClient.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Regarding.UID == uid && e.Reason == reason {
				msg = e.Note
				return true, nil
			}
		}
		return false, nil
	})
	return msg
}
