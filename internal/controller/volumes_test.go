package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestClaimForeign checks which existing claims a volume tfk8s would create may mount:
// the job's own, and a retained claim a job of the name left; never a notebook's home
// or any claim of another owner or none.
func TestClaimForeign(t *testing.T) {
	job := testutil.MakeTFJob("nb-b", "team").UID("uid-job").Workers(1).Obj()
	home := &tfv1.JobVolume{Name: "home"}
	kept := &tfv1.JobVolume{Name: "home", Retain: true}
	claim := func(labels map[string]string, owners ...metav1.OwnerReference) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nb-b-home", Labels: labels, OwnerReferences: owners}}
	}
	ref := func(kind, name, uid string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{Kind: kind, Name: name, UID: types.UID("uid-" + uid), Controller: ptr.To(controller)}
	}
	ours := map[string]string{tfv1.LabelJobName: "nb-b", tfv1.LabelVolume: "home"}
	notebook := map[string]string{tfv1.LabelNotebook: "nb-b"}
	cases := []struct {
		name  string
		v     *tfv1.JobVolume
		claim *corev1.PersistentVolumeClaim
		want  string
	}{
		{name: "created for this job", v: home, claim: claim(ours, ref("TFJob", "nb-b", "job", true))},
		{name: "an earlier job of the name", v: home, claim: claim(ours, ref("TFJob", "nb-b", "old", true)), want: "belongs to TFJob nb-b"},
		{name: "a notebook's home, owned", v: home, claim: claim(notebook, ref("Deployment", "nb-b", "nb", true)), want: "belongs to Deployment nb-b"},
		{name: "a notebook's home, unowned", v: home, claim: claim(notebook), want: "is owned by nothing"},
		{name: "owners, none the controller", v: home, claim: claim(ours, ref("TFJob", "nb-b", "job", false)), want: "has owners but no controller"},
		{name: "retained by a job of the name", v: kept, claim: claim(ours)},
		{name: "retained volume, a notebook's home", v: kept, claim: claim(notebook),
			want: "is not labelled tfk8s.io/job-name=nb-b, tfk8s.io/volume=home as a retained claim of this job"},
		{name: "retained volume, another volume's claim", v: kept, claim: claim(map[string]string{tfv1.LabelJobName: "nb-b", tfv1.LabelVolume: "data"}),
			want: "is not labelled tfk8s.io/job-name=nb-b, tfk8s.io/volume=home as a retained claim of this job"},
		{name: "unowned claim of a volume not retained", v: home, claim: claim(ours), want: "is owned by nothing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := claimForeign(job, tc.v, tc.claim); got != tc.want {
				t.Errorf("claimForeign = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDecideClaims: the claims a job's volumes need are created before its pods, an
// existing claim or class that is missing fails the job naming the field, and volumes
// observe did not read make the pods wait.
func TestDecideClaims(t *testing.T) {
	job := testutil.MakeTFJob("train", "team").UID("uid-job").Workers(1).Obj()
	job.Spec.Volumes = []tfv1.JobVolume{
		{Name: "data", MountPath: "/data", Size: ptr.To(resource.MustParse("1Gi")), StorageClassName: ptr.To("fast")},
		{Name: "shared", MountPath: "/shared", ExistingClaim: "team-shared"},
	}
	ours := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "train-data",
		OwnerReferences: []metav1.OwnerReference{{Kind: "TFJob", Name: "train", UID: "uid-job", Controller: ptr.To(true)}}}}
	theirs := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "train-data"}}
	shared := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "team-shared"}}
	cases := []struct {
		name        string
		views       []volumeView
		wantCreate  []string
		wantInvalid string
		wantUnread  bool
	}{
		{name: "not read", wantUnread: true},
		{name: "read in part", views: []volumeView{{claim: ours}}, wantUnread: true},
		{name: "claim to create", views: []volumeView{{}, {claim: shared}}, wantCreate: []string{"train-data"}},
		{name: "all there", views: []volumeView{{claim: ours}, {claim: shared}}},
		{name: "class missing", views: []volumeView{{classMissing: true}, {}},
			wantInvalid: `spec.volumes[0].storageClassName: storage class "fast" does not exist`},
		{name: "existing claim missing", views: []volumeView{{claim: ours}, {}},
			wantInvalid: `spec.volumes[1].existingClaim: claim "team-shared" does not exist in namespace team`},
		{name: "a claim of the name not the job's", views: []volumeView{{claim: theirs}, {claim: shared}},
			wantInvalid: `spec.volumes[0].name "data": claim train-data already exists and is owned by nothing; the controller mounts only a claim ` +
				"it created for this job: rename the volume or the job, or ask an admin to mount the claim with existingClaim"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			create, invalid, unread := decideClaims(job, tc.views)
			var names []string
			for _, c := range create {
				names = append(names, c.Name)
			}
			type result struct {
				Create  []string
				Invalid string
				Unread  bool
			}
			if diff := cmp.Diff(result{tc.wantCreate, tc.wantInvalid, tc.wantUnread}, result{names, invalid, unread}); diff != "" {
				t.Errorf("decideClaims (-want +got):\n%s", diff)
			}
		})
	}
}
