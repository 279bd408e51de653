package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// refuseJobsNamed makes the API server refuse, in the test's namespace, every TFJob
// whose name starts with prefix, but let dry runs through: submit's server-side check
// passes, the creation that follows the Secret's fails, as when a quota or a webhook
// refuses the job at the last moment. It returns once the policy is in force.
func (f *fixture) refuseJobsNamed(prefix string) {
	f.t.Helper()
	ctx := context.Background()
	name := "refuse-" + f.ns
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{tfv1.GroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"tfjobs"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: fmt.Sprintf("request.dryRun || !object.metadata.name.startsWith('%s')", prefix),
				Message:    "refused by the test's admission policy",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.ns},
			}},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := k8sClient.Create(ctx, obj); err != nil {
			f.t.Fatal(err)
		}
		f.t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
	}
	probes := 0
	testutil.Eventually(f.t, "the admission policy in force", func(ctx context.Context) (bool, error) {
		probes++
		probe := testutil.MakeTFJob(fmt.Sprintf("%sprobe-%d", prefix, probes), f.ns).Workers(1).Obj()
		err := k8sClient.Create(ctx, probe)
		if err == nil {
			return false, k8sClient.Delete(ctx, probe)
		}
		return strings.Contains(err.Error(), "refused by the test's admission policy"), nil
	})
}

// secretOwners returns the UIDs that own a Secret; an error if it is gone.
func (f *fixture) secretOwners(name string) ([]types.UID, error) {
	s := &corev1.Secret{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, s); err != nil {
		return nil, err
	}
	var uids []types.UID
	for _, ref := range s.OwnerReferences {
		if ref.Kind == "TFJob" {
			uids = append(uids, ref.UID)
		}
	}
	return uids, nil
}

// TestStorageSecretPerJob: each job has a Secret of its own, owned by it. Two submits
// at once, one refused by the API server: the refused one leaves nothing, the other's
// Secret is intact. Deleting a job deletes its Secret (the garbage collector of the
// real kube-controller-manager), and a job of the same name submitted right after the
// delete gets a Secret of its own.
func TestStorageSecretPerJob(t *testing.T) {
	f := newFixture(t)
	f.refuseJobsNamed("refused")
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	submit := func(name string) result {
		return f.tfk8s("submit", code, "--name", name, "--image", "tf:2.16", "--artifacts", "model", "--", "python3", "train.py")
	}

	results := make(chan result, 2)
	for _, name := range []string{"kept", "refused"} {
		go func() { results <- submit(name) }()
	}
	for range 2 {
		r := <-results
		switch {
		case strings.Contains(r.stdout, "tfjob.tfk8s.io/kept created"):
			if r.code != 0 {
				t.Errorf("submit kept: %s", r)
			}
		case r.code == 0 || !strings.Contains(r.stderr, "refused by the test's admission policy"):
			t.Errorf("submit refused: want the API server's refusal, got %s", r)
		}
	}
	kept := f.getJob("kept")
	if kept.Spec.Storage.SecretRef.Name != "kept-storage" {
		t.Errorf("kept's secretRef = %q, want kept-storage", kept.Spec.Storage.SecretRef.Name)
	}
	if diff := cmp.Diff([]string{"kept-storage"}, f.secrets()); diff != "" {
		t.Errorf("secrets after the refused submit (-want +got):\n%s", diff)
	}
	if owners, err := f.secretOwners("kept-storage"); err != nil || !cmp.Equal(owners, []types.UID{kept.UID}) {
		t.Errorf("kept-storage owners = %v (%v), want the job %s", owners, err, kept.UID)
	}

	// Deleted with its job.
	f.mustSucceed("delete", "kept", "--wait")
	testutil.Eventually(t, "kept-storage deleted with its job", func(ctx context.Context) (bool, error) {
		_, err := f.secretOwners("kept-storage")
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})

	// The same name again at once: the old Secret, whatever the garbage collector has
	// done with it yet, gives way to the new job's.
	for round := range 3 {
		if round > 0 {
			f.mustSucceed("delete", "again", "--wait")
		}
		r := submit("again")
		again := f.getJob("again")
		if r.code != 0 || !strings.Contains(r.stdout, "secret/again-storage created") {
			t.Fatalf("round %d: submit again: %s", round, r)
		}
		if owners, err := f.secretOwners("again-storage"); err != nil || !cmp.Equal(owners, []types.UID{again.UID}) {
			t.Errorf("round %d: again-storage owners = %v (%v), want the new job %s", round, owners, err, again.UID)
		}
	}
}

// TestConcurrentSubmitsOfOneName: two submits of the same name at once. One job is
// created; the other submit fails; the job's Secret is there and owned by it.
func TestConcurrentSubmitsOfOneName(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	results := make(chan result, 2)
	for range 2 {
		go func() {
			results <- f.tfk8s("submit", code, "--name", "twin", "--image", "tf:2.16", "--", "python3", "train.py")
		}()
	}
	succeeded := 0
	for range 2 {
		if r := <-results; r.code == 0 {
			succeeded++
		} else if !strings.Contains(r.stderr, "already exists") && !strings.Contains(r.stderr, "belongs to the existing tfjob twin") {
			t.Errorf("the losing submit: %s", r)
		}
	}
	if succeeded != 1 {
		t.Fatalf("%d submits succeeded, want 1", succeeded)
	}
	twin := f.getJob("twin")
	if owners, err := f.secretOwners("twin-storage"); err != nil || !cmp.Equal(owners, []types.UID{twin.UID}) {
		t.Errorf("twin-storage owners = %v (%v), want the job %s", owners, err, twin.UID)
	}
}
