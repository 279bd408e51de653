package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestDecideDeviceClaims checks what a job whose workers ask for devices gets before
// its pods: a template to create, a wait while the template a deleted job of its name
// left is collected, or a refusal naming the field when DRA is not served, the class
// does not exist or the template is another's.
func TestDecideDeviceClaims(t *testing.T) {
	job := testutil.MakeTFJob("dra", "team").UID("uid-job").Workers(2).Obj()
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].DeviceClaim = &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com"}
	tmpl := func(owners ...metav1.OwnerReference) *resourcev1.ResourceClaimTemplate {
		return &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "dra-worker-devices", OwnerReferences: owners}}
	}
	ref := func(kind, name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}
	}
	worker := func(tv deviceTypeView) deviceClaimView {
		tv.rt = tfv1.ReplicaTypeWorker
		return deviceClaimView{asked: true, served: true, types: []deviceTypeView{tv}}
	}
	type result struct {
		Create  []string
		Wait    time.Duration
		Invalid string
	}
	cases := []struct {
		name string
		view deviceClaimView
		want result
	}{
		{name: "unread: observe found no pods to create", view: deviceClaimView{}, want: result{Wait: unreadWait}},
		{name: "template missing", view: worker(deviceTypeView{}), want: result{Create: []string{"dra-worker-devices"}}},
		{name: "the job's own template", view: worker(deviceTypeView{tmpl: tmpl(ref("TFJob", "dra", "uid-job"))})},
		{name: "left by a deleted job of the name", view: worker(deviceTypeView{tmpl: tmpl(ref("TFJob", "dra", "uid-old"))}),
			want: result{Wait: leftTemplateWait}},
		{name: "another's", view: worker(deviceTypeView{tmpl: tmpl(ref("Deployment", "dra", "uid-d"))}),
			want: result{Invalid: "spec.tfReplicaSpecs[Worker].deviceClaim: ResourceClaimTemplate dra-worker-devices already exists and belongs to Deployment dra (uid uid-d); rename the job"}},
		{name: "owned by nothing", view: worker(deviceTypeView{tmpl: tmpl()}),
			want: result{Invalid: "spec.tfReplicaSpecs[Worker].deviceClaim: ResourceClaimTemplate dra-worker-devices already exists and is owned by nothing; rename the job"}},
		{name: "class missing", view: worker(deviceTypeView{classMissing: true}),
			want: result{Invalid: `spec.tfReplicaSpecs[Worker].deviceClaim.deviceClassName: DeviceClass "gpu.example.com" does not exist`}},
		{name: "DRA not served", view: deviceClaimView{asked: true},
			want: result{Invalid: "spec.tfReplicaSpecs[Worker].deviceClaim: the API server does not serve resource.k8s.io/v1 ResourceClaimTemplates: " +
				"Dynamic Resource Allocation is off in this cluster; ask for devices by resources.limits instead"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			create, wait, invalid := decideDeviceClaims(job, tc.view)
			got := result{Wait: wait, Invalid: invalid}
			for _, c := range create {
				got.Create = append(got.Create, c.tmpl.Name)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("decideDeviceClaims (-want +got):\n%s", d)
			}
		})
	}
}
