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

// TestDecideNotebookClaims: a notebook's job mounts the claims it names only once each
// is read and found its notebook's, shared, or readable by the notebook's account; a
// claim observe did not read makes the pods wait rather than pass unchecked.
func TestDecideNotebookClaims(t *testing.T) {
	job := testutil.MakeTFJob("j", "team").Workers(1).Obj()
	job.Annotations = map[string]string{tfv1.AnnotationCreator: "system:serviceaccount:team:nb"}
	job.Spec.Volumes = []tfv1.JobVolume{{Name: "home", ExistingClaim: "nb-home"}, {Name: "data", ExistingClaim: "datasets"}}
	other := job.DeepCopy()
	other.Annotations[tfv1.AnnotationCreator] = "alice"
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nb", UID: "uid-nb"}}
	home := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nb-home",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ServiceAccount", Name: "nb", UID: "uid-nb"}}}}
	datasets := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "datasets"}}
	claims := func(kv ...any) map[string]*corev1.PersistentVolumeClaim {
		m := map[string]*corev1.PersistentVolumeClaim{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)], _ = kv[i+1].(*corev1.PersistentVolumeClaim)
		}
		return m
	}
	type result struct {
		Invalid string
		Unread  bool
	}
	cases := []struct {
		name string
		job  *tfv1.TFJob
		v    notebookView
		want result
	}{
		{name: "not read", job: job, want: result{Unread: true}},
		{name: "another creator, not read", job: other},
		{name: "read, the creator no notebook account", job: job, v: notebookView{read: true}},
		{name: "a claim not read", job: job, v: notebookView{read: true, account: account, claims: claims("nb-home", home)},
			want: result{Unread: true}},
		{name: "its home, and a claim it may read", job: job,
			v: notebookView{read: true, account: account, claims: claims("nb-home", home, "datasets", datasets), mayGet: map[string]bool{"datasets": true}}},
		{name: "a claim that does not exist", job: job, v: notebookView{read: true, account: account, claims: claims("nb-home", nil)},
			want: result{Invalid: "spec.volumes[0].existingClaim: claim nb-home does not exist; a job of notebook account nb mounts only claims that exist when its pods are made"}},
		{name: "a claim it may not read", job: job,
			v: notebookView{read: true, account: account, claims: claims("nb-home", home, "datasets", datasets), mayGet: map[string]bool{"datasets": false}},
			want: result{Invalid: "spec.volumes[1].existingClaim: claim datasets: a job of notebook account nb may mount only the claims its notebook owns, " +
				"those labelled tfk8s.io/shared-claim=true, and those that account may read"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got result
			got.Invalid, got.Unread = decideNotebookClaims(tc.job, tc.v)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decideNotebookClaims (-want +got):\n%s", diff)
			}
		})
	}
}
