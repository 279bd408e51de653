package api

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// makeClaim creates claim name in ns, owned by the ServiceAccount owner if not "",
// labelled shared if shared.
func makeClaim(t *testing.T, ns, name, owner string, shared bool) {
	t.Helper()
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
	if owner != "" {
		sa := &corev1.ServiceAccount{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: owner}, sa); err != nil {
			t.Fatal(err)
		}
		pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ServiceAccount", Name: owner, UID: sa.UID}}
	}
	if shared {
		pvc.Labels = map[string]string{"tfk8s.io/shared-claim": "true"}
	}
	if err := k8sClient.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
}

// mountByTemplate and mountAsVolume mount claim in the job's Worker, through a
// template's persistentVolumeClaim and through spec.volumes[].existingClaim.
func mountByTemplate(claim string) func(j *tfv1.TFJob) {
	return func(j *tfv1.TFJob) {
		worker(j).Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	}
}

func mountAsVolume(claim string) func(j *tfv1.TFJob) {
	return func(j *tfv1.TFJob) {
		j.Spec.Volumes = []tfv1.JobVolume{{Name: "c", MountPath: "/mnt/c", ExistingClaim: claim}}
	}
}

// TestNotebookJobClaims: in a namespace with notebooks nb and nb-b, a job from nb's
// account may mount nb-home (its account owns it) and a claim labelled
// tfk8s.io/shared-claim=true, but not nb-b-home nor a claim nobody owns, through a
// template's persistentVolumeClaim or spec.volumes[].existingClaim: the refusal names
// the field and the claim. An account that is no notebook's may mount the claims it
// may get, and any claim if it may create pods. An update that names no new claim is not checked. The policy takes the namespace's claims as parameters, and this shows the
// API server evaluates it once per claim.
func TestNotebookJobClaims(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	ctx := context.Background()
	nb := notebookAccount(t, ns, "nb", true)
	notebookAccount(t, ns, "nb-b", true)
	plain := notebookAccount(t, ns, "builder", false)
	grant(t, ns, "builder", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get"}})
	makeClaim(t, ns, "nb-home", "nb", false)
	makeClaim(t, ns, "nb-b-home", "nb-b", false)
	makeClaim(t, ns, "datasets", "", true)
	makeClaim(t, ns, "scratch", "", false)
	waitNotebookPolicy(t, nb, ns)
	waitClaimsPolicy(t, nb, ns)

	w := "spec.tfReplicaSpecs.Worker.template.spec."
	msg := ": a TFJob from system:serviceaccount:" + ns + ":nb may mount only the claims its notebook owns, those labelled tfk8s.io/shared-claim=true"
	cases := []policyCase{
		{name: "own home, template", change: mountByTemplate("nb-home")},
		{name: "own home, existingClaim", change: mountAsVolume("nb-home")},
		{name: "shared claim, template", change: mountByTemplate("datasets")},
		{name: "shared claim, existingClaim", change: mountAsVolume("datasets")},
		{name: "another notebook's home, template", change: mountByTemplate("nb-b-home"),
			wantField: w + "volumes[0].persistentVolumeClaim.claimName", wantMsg: "claim nb-b-home" + msg},
		{name: "another notebook's home, existingClaim", change: mountAsVolume("nb-b-home"),
			wantField: "spec.volumes[0].existingClaim", wantMsg: "claim nb-b-home" + msg},
		{name: "a claim nobody owns, template", change: mountByTemplate("scratch"),
			wantField: w + "volumes[0].persistentVolumeClaim.claimName", wantMsg: "claim scratch" + msg},
		{name: "a claim nobody owns, existingClaim", change: mountAsVolume("scratch"),
			wantField: "spec.volumes[0].existingClaim", wantMsg: "claim scratch" + msg},
	}
	checkNotebookCases(t, nb, plain, ns, cases)
	checkAccountsThatAreNoNotebooks(t, ns)

	// An admin's job mounting claims the notebook may not: the notebook may still
	// suspend it, since the update names no new claim.
	admins := notebookJob(ns, "admins")
	mountByTemplate("nb-b-home")(admins)
	mountAsVolume("scratch")(admins)
	if err := k8sClient.Create(ctx, admins); err != nil {
		t.Fatal(err)
	}
	checkPatches(t, ns, []patchCase{{name: "suspend an admin's job mounting others' claims", as: nb, job: "admins",
		patch: `{"spec":{"runPolicy":{"suspend":true}}}`}})
}

// checkAccountsThatAreNoNotebooks: a CI account that may create pods, and no claim,
// mounts any claim through a TFJob, as it could through a pod of its own; one that may
// create TFJobs only is refused a claim it may not get, which a TFJob would open to it.
func checkAccountsThatAreNoNotebooks(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	ci := notebookAccount(t, ns, "ci", false)
	tfjobsOnly := notebookAccount(t, ns, "tfjobs-only", false)
	grant(t, ns, "ci", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}})
	for _, claim := range []string{"nb-b-home", "scratch"} {
		for _, mount := range []func(string) func(*tfv1.TFJob){mountByTemplate, mountAsVolume} {
			job := notebookJob(ns, "ci-job")
			mount(claim)(job)
			if err := ci.Create(ctx, job, client.DryRunAll); err != nil {
				t.Errorf("a CI account that may create pods, mounting %s: %v; want it admitted", claim, err)
			}
			err := tfjobsOnly.Create(ctx, job, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), "claim "+claim+": a TFJob from system:serviceaccount:"+ns+":tfjobs-only may mount only") {
				t.Errorf("an account that may create TFJobs only, mounting %s: %v; want the claim refused", claim, err)
			}
		}
	}
}

// grant gives ServiceAccount account in ns rule, through a Role and RoleBinding
// named account-grant.
func grant(t *testing.T, ns, account string, rule rbacv1.PolicyRule) {
	t.Helper()
	name := account + "-grant"
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: []rbacv1.PolicyRule{rule}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: ns}}}
	for _, obj := range []client.Object{role, binding} {
		if err := k8sClient.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
}

// waitClaimsPolicy waits until the API server holds nb's account in ns to the claims
// policy: it reads the namespace's claims, the policy's parameters, through an
// informer.
func waitClaimsPolicy(t *testing.T, nb client.Client, ns string) {
	t.Helper()
	probe := notebookJob(ns, "probe")
	mountByTemplate("nb-b-home")(probe)
	waitRefused(t, nb, probe, "claim nb-b-home", "mount nb-b-home")
}
