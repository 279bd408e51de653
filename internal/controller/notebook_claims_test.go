package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestNamedClaims: the claims a job mounts by name, each with its field, and not the
// claims its own spec.volumes create, even when a template names them too.
func TestNamedClaims(t *testing.T) {
	pvc := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}
	job := testutil.MakeTFJob("j", "team").PS(1).Workers(1).Obj()
	job.Spec.Volumes = []tfv1.JobVolume{{Name: "data"}, {Name: "home", ExistingClaim: "nb-home"}}
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Volumes = []corev1.Volume{
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, pvc("j-data"), pvc("nb-b-home"),
	}
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS].Template.Spec.Volumes = []corev1.Volume{pvc("datasets")}
	want := []namedClaim{
		{field: "spec.volumes[1].existingClaim", name: "nb-home"},
		{field: "spec.tfReplicaSpecs.PS.template.spec.volumes[0].persistentVolumeClaim.claimName", name: "datasets"},
		{field: "spec.tfReplicaSpecs.Worker.template.spec.volumes[2].persistentVolumeClaim.claimName", name: "nb-b-home"},
	}
	if diff := cmp.Diff(want, namedClaims(job), cmp.AllowUnexported(namedClaim{})); diff != "" {
		t.Errorf("namedClaims (-want +got):\n%s", diff)
	}
}

// TestClaimMountable: a notebook's job mounts without asking a claim its account owns
// (name and UID), or one labelled shared; not one of an account of the same name
// before it was made again, nor another owner's.
func TestClaimMountable(t *testing.T) {
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nb", UID: "uid-nb"}}
	owned := func(kind, name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: kind, Name: name, UID: k8stypes.UID(uid)}
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		owners []metav1.OwnerReference
		want   bool
	}{
		{name: "owned by the account", owners: []metav1.OwnerReference{owned("ServiceAccount", "nb", "uid-nb")}, want: true},
		{name: "shared", labels: map[string]string{tfv1.LabelSharedClaim: "true"}, want: true},
		{name: "shared false", labels: map[string]string{tfv1.LabelSharedClaim: "false"}},
		{name: "an earlier account of the name", owners: []metav1.OwnerReference{owned("ServiceAccount", "nb", "uid-old")}},
		{name: "another notebook's", owners: []metav1.OwnerReference{owned("ServiceAccount", "nb-b", "uid-nb-b")}},
		{name: "a Deployment of the name", owners: []metav1.OwnerReference{owned("Deployment", "nb", "uid-nb")}},
		{name: "nobody's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: tc.labels, OwnerReferences: tc.owners}}
			if got := claimMountable(claim, account); got != tc.want {
				t.Errorf("claimMountable = %v, want %v", got, tc.want)
			}
		})
	}
}
