package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestNotebookJobCannotWaitForAClaim: admission checks only the claims that exist, so
// notebook nb-a's job could name nb-c-home before notebook nb-c is started and mount
// it once it appears. The controller holds a notebook's job to its claims when it
// makes the pods: a missing claim, through a template or spec.volumes, fails the job
// with InvalidVolume naming the field, and no pod is made; the notebook's own home and
// a shared claim are mounted; a job of another creator still waits for its claim.
func TestNotebookJobCannotWaitForAClaim(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nb-a", Namespace: ns, Labels: map[string]string{tfv1.LabelNotebook: "nb-a"}}}
	if err := k8sClient.Create(ctx, account); err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ServiceAccount", Name: "nb-a", UID: account.UID}
	makeClaim(t, ns, "nb-a-home", nil, owner)
	makeClaim(t, ns, "datasets", map[string]string{tfv1.LabelSharedClaim: "true"})
	makeClaim(t, ns, "scratch", nil)

	byTemplate := func(claim string) func(*tfv1.TFJob) {
		return func(j *tfv1.TFJob) {
			j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Volumes = []corev1.Volume{{Name: "c",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		}
	}
	asVolume := func(claim string) func(*tfv1.TFJob) {
		return func(j *tfv1.TFJob) {
			j.Spec.Volumes = []tfv1.JobVolume{{Name: "c", MountPath: "/c", ExistingClaim: claim}}
		}
	}
	w := "spec.tfReplicaSpecs.Worker.template.spec.volumes[0].persistentVolumeClaim.claimName: claim "
	for _, tc := range []struct {
		name, job, creator string
		change             func(*tfv1.TFJob)
		want               string // the InvalidVolume message's start; "" for pods
	}{
		{name: "a future home, template", job: "t-future", creator: "nb-a", change: byTemplate("nb-c-home"),
			want: w + "nb-c-home does not exist"},
		{name: "a future home, existingClaim", job: "v-future", creator: "nb-a", change: asVolume("nb-c-home"),
			want: `spec.volumes[0].existingClaim: claim "nb-c-home" does not exist`},
		{name: "a claim nobody owns", job: "t-scratch", creator: "nb-a", change: byTemplate("scratch"),
			want: w + "scratch: a job of notebook account nb-a may mount only"},
		{name: "its own home", job: "t-home", creator: "nb-a", change: byTemplate("nb-a-home")},
		{name: "a shared claim", job: "v-shared", creator: "nb-a", change: asVolume("datasets")},
		{name: "another creator waits for its claim", job: "t-admin", creator: "admin", change: byTemplate("later")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob(tc.job, ns).Workers(1).Obj()
			job.Annotations = map[string]string{tfv1.AnnotationCreator: "system:serviceaccount:" + ns + ":" + tc.creator}
			tc.change(job)
			if err := k8sClient.Create(ctx, job); err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				waitPods(t, ns, job.Name, tc.job+"-worker-0")
				return
			}
			assertInvalidVolume(t, ns, job.Name, tc.want)
		})
	}

	// Held while nb-c's home does not exist; nb-c starts, its home appears; the job
	// is resumed and must not mount it.
	held := testutil.MakeTFJob("held", ns).Workers(1).Suspend(true).Obj()
	held.Annotations = map[string]string{tfv1.AnnotationCreator: "system:serviceaccount:" + ns + ":nb-a"}
	byTemplate("nb-c-home")(held)
	if err := k8sClient.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	other := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nb-c", Namespace: ns, Labels: map[string]string{tfv1.LabelNotebook: "nb-c"}}}
	if err := k8sClient.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	makeClaim(t, ns, "nb-c-home", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ServiceAccount", Name: "nb-c", UID: other.UID})
	if err := k8sClient.Patch(ctx, held, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"runPolicy":{"suspend":false}}}`))); err != nil {
		t.Fatal(err)
	}
	assertInvalidVolume(t, ns, "held", w+"nb-c-home: a job of notebook account nb-a may mount only")
}

// assertInvalidVolume waits for the job to fail with InvalidVolume, its message
// starting with want, and checks that it has no pods.
func assertInvalidVolume(t *testing.T, ns, name, want string) {
	t.Helper()
	c := conditionOf(waitCondition(t, ns, name, tfv1.JobFailed), tfv1.JobFailed)
	if c.Reason != tfv1.ReasonInvalidVolume || !strings.HasPrefix(c.Message, want) {
		t.Errorf("Failed %s: %q; want %s starting %q", c.Reason, c.Message, tfv1.ReasonInvalidVolume, want)
	}
	if pods, err := jobPods(context.Background(), ns, name); err != nil || len(pods) != 0 {
		t.Errorf("pods %v (%v), want none", pods, err)
	}
}

// makeClaim creates claim name in ns with labels and owners.
func makeClaim(t *testing.T, ns, name string, labels map[string]string, owners ...metav1.OwnerReference) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: owners},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := k8sClient.Create(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
}
