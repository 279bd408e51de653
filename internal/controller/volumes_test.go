package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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
