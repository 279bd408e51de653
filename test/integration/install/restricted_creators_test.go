package install

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestRestrictedTFJobCreators: with policy.restrictedTFJobCreators naming a group and a
// user, the chart renders the notebooks' rules again for them, and the API server
// holds them to it: a member of the group may not mount a Secret it may not read nor
// run as another ServiceAccount, the refusal naming the field; it may reference a
// Secret it may read; a user named nowhere is not held to it.
func TestRestrictedTFJobCreators(t *testing.T) {
	objs, err := renderChartValues(`policy: {restrictedTFJobCreators: {groups: [interns], users: [bob]}}`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			names = append(names, o.GetKind()+" "+o.GetName())
		}
	}
	for _, want := range []string{"ValidatingAdmissionPolicy tfk8s-restricted-tfjob-creators", "ValidatingAdmissionPolicyBinding tfk8s-restricted-tfjob-creators",
		"ValidatingAdmissionPolicy tfk8s-notebook-tfjob", "ValidatingAdmissionPolicyBinding tfk8s-notebook-tfjob"} {
		if !strings.Contains(strings.Join(names, "\n"), want) {
			t.Fatalf("the chart renders no %s; it renders %q", want, names)
		}
	}
	createNamespace(t)
	apply(t, "chart", objs)
	t.Cleanup(func() {
		for _, o := range objs {
			if strings.HasSuffix(o.GetName(), "restricted-tfjob-creators") {
				if err := k8sClient.Delete(context.Background(), o); err != nil {
					t.Errorf("deleting %s: %v", identity(o), err)
				}
			}
		}
	})

	ns := testutil.Namespace(t, k8sClient)
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "submitters", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{tfv1.GroupVersion.Group}, Resources: []string{"tfjobs"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"mine"}, Verbs: []string{"get"}},
	}}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "submitters", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "submitters"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.GroupKind, Name: "interns"}, {Kind: rbacv1.UserKind, Name: "bob"}, {Kind: rbacv1.UserKind, Name: "carol"},
		},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := k8sClient.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	as := func(user string, groups ...string) client.Client {
		cfg := rest.CopyConfig(cp.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
		c, err := client.New(cfg, client.Options{Scheme: scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice, bob, carol := as("alice", "interns"), as("bob"), as("carol")
	withSecret := func(name string) *tfv1.TFJob {
		j := testutil.MakeTFJob("j", ns).Workers(1).Obj()
		spec := &j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec
		spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}}
		return j
	}
	asAccount := testutil.MakeTFJob("j", ns).Workers(1).Obj()
	asAccount.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.ServiceAccountName = "builder"
	privileged := testutil.MakeTFJob("j", ns).Workers(1).Obj()
	privileged.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}

	// The policy is in force once the API server has compiled it: wait for a refusal.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return alice.Create(ctx, withSecret("victim"), client.DryRunAll) != nil, nil
	})
	if err != nil {
		t.Fatalf("a member of interns may still mount Secret victim: %v", err)
	}
	w := "spec.tfReplicaSpecs.Worker.template.spec."
	for _, tc := range []struct {
		name      string
		c         client.Client
		job       *tfv1.TFJob
		wantField string // "" for accepted
		wantMsg   string
	}{
		{"group member, Secret it may not read", alice, withSecret("victim"), w + "volumes[0].secret.secretName", "Secret victim: a TFJob from alice may reference only the Secrets that account may read"},
		{"group member, Secret it may read", alice, withSecret("mine"), "", ""},
		{"group member, another account", alice, asAccount, w + "serviceAccountName", "runs as the default ServiceAccount, no other"},
		{"named user, privileged", bob, privileged, w + "containers[0].securityContext.privileged", "may not ask for host access"},
		{"named user, Secret it may not read", bob, withSecret("victim"), w + "volumes[0].secret.secretName", "Secret victim"},
		{"user named nowhere, Secret it may not read", carol, withSecret("victim"), "", ""},
		{"user named nowhere, another account", carol, asAccount, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Create(ctx, tc.job.DeepCopy(), client.DryRunAll)
			switch {
			case tc.wantField == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantField != "" && (err == nil || !strings.Contains(err.Error(), tc.wantField+": ") || !strings.Contains(err.Error(), tc.wantMsg)):
				t.Errorf("got %v; want a refusal naming %s: %s", err, tc.wantField, tc.wantMsg)
			}
		})
	}
}
