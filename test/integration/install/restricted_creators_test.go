package install

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
// holds them to it: a member of the group may not mount a Secret it may not read, nor
// a claim, nor run as another ServiceAccount, nor name another creator, the refusal
// naming the field; it may reference a Secret it may read and a shared claim. The
// priority classes, tolerations and replica ceiling the chart's values allow are
// what the API server allows. A user named nowhere is not held to any of it.
func TestRestrictedTFJobCreators(t *testing.T) {
	objs, err := renderChartValues(`policy: {restrictedTFJobCreators: {groups: [interns], users: [bob]}, maxReplicas: 3,
  allowedPriorityClasses: [batch], allowedTolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]}`)
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
		"ValidatingAdmissionPolicy tfk8s-restricted-tfjob-creators-claims", "ValidatingAdmissionPolicyBinding tfk8s-restricted-tfjob-creators-claims",
		"ValidatingAdmissionPolicy tfk8s-notebook-tfjob", "ValidatingAdmissionPolicyBinding tfk8s-notebook-tfjob"} {
		if !strings.Contains(strings.Join(names, "\n"), want) {
			t.Fatalf("the chart renders no %s; it renders %q", want, names)
		}
	}
	createNamespace(t)
	apply(t, "chart", objs)
	t.Cleanup(func() {
		for _, o := range objs {
			if strings.HasPrefix(o.GetName(), "tfk8s-restricted-tfjob-creators") {
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
	// job is user's job, as tfk8s submit makes it: its creator recorded.
	job := func(user string) *tfv1.TFJob {
		j := testutil.MakeTFJob("j", ns).Workers(1).Obj()
		j.Annotations = map[string]string{tfv1.AnnotationCreator: user}
		return j
	}
	worker := func(j *tfv1.TFJob) *corev1.PodSpec {
		return &j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec
	}
	withSecret := func(user, name string) *tfv1.TFJob {
		j := job(user)
		worker(j).Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}}
		return j
	}
	asAccount := job("alice")
	worker(asAccount).ServiceAccountName = "builder"
	privileged := job("bob")
	worker(privileged).Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	// What the chart's values allow: priority class batch, the gpu toleration, three
	// replicas.
	batch, urgent := job("alice"), job("alice")
	worker(batch).PriorityClassName, worker(urgent).PriorityClassName = "batch", "urgent"
	gpu, anyTaint := job("alice"), job("alice")
	worker(gpu).Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	worker(anyTaint).Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	four := testutil.MakeTFJob("j", ns).Workers(4).Obj()
	four.Annotations = map[string]string{tfv1.AnnotationCreator: "bob"}
	claim := func(user, name string) *tfv1.TFJob {
		j := job(user)
		worker(j).Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
		return j
	}
	makeClaim(t, ns, "datasets", true)
	makeClaim(t, ns, "private", false)

	// The policy is in force once the API server has compiled it: wait for a refusal.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return alice.Create(ctx, withSecret("alice", "victim"), client.DryRunAll) != nil &&
			alice.Create(ctx, claim("alice", "private"), client.DryRunAll) != nil, nil
	})
	if err != nil {
		t.Fatalf("a member of interns may still mount Secret victim or claim private: %v", err)
	}
	w := "spec.tfReplicaSpecs.Worker.template.spec."
	for _, tc := range []struct {
		name      string
		c         client.Client
		job       *tfv1.TFJob
		wantField string // "" for accepted
		wantMsg   string
	}{
		{"group member, Secret it may not read", alice, withSecret("alice", "victim"), w + "volumes[0].secret.secretName", "Secret victim: a TFJob from alice may reference only the Secrets that account may read"},
		{"group member, Secret it may read", alice, withSecret("alice", "mine"), "", ""},
		{"group member, another account", alice, asAccount, w + "serviceAccountName", "runs as the default ServiceAccount, no other"},
		{"group member, another creator", alice, withSecret("bob", "mine"), "metadata.annotations[tfk8s.io/creator]", "names its creator"},
		{"group member, an allowed priority class", alice, batch, "", ""},
		{"group member, another priority class", alice, urgent, w + "priorityClassName", "other than policy.allowedPriorityClasses"},
		{"group member, an allowed toleration", alice, gpu, "", ""},
		{"group member, a toleration of every taint", alice, anyTaint, w + "tolerations[0]", "policy.allowedTolerations"},
		{"group member, a shared claim", alice, claim("alice", "datasets"), "", ""},
		{"group member, a claim it may not read", alice, claim("alice", "private"), w + "volumes[0].persistentVolumeClaim.claimName",
			"claim private: a TFJob from alice may mount only the claims its notebook owns, those labelled tfk8s.io/shared-claim=true, and those that account may read"},
		{"named user, privileged", bob, privileged, w + "containers[0].securityContext.privileged", "may not ask for host access"},
		{"named user, Secret it may not read", bob, withSecret("bob", "victim"), w + "volumes[0].secret.secretName", "Secret victim"},
		{"named user, more replicas than the chart allows", bob, four, "spec.tfReplicaSpecs", "4 replicas in all: a TFJob from bob may have at most 3"},
		{"user named nowhere, Secret it may not read", carol, withSecret("", "victim"), "", ""},
		{"user named nowhere, another account", carol, asAccount, "", ""},
		{"user named nowhere, a claim it may not read", carol, claim("", "private"), "", ""},
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

// makeClaim creates claim name in ns, labelled shared if shared.
func makeClaim(t *testing.T, ns, name string, shared bool) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
	if shared {
		pvc.Labels = map[string]string{"tfk8s.io/shared-claim": "true"}
	}
	if err := k8sClient.Create(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
}
