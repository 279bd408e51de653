package jobspec

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// FuzzDecodeManifest: whatever submit -f reads, Decode returns an error or a
// tfk8s.io TFJob without status; a Kubeflow one has only tfk8s's replica types and
// not Kubeflow's managedBy; and the job, written out as JSON, decodes to itself.
func FuzzDecodeManifest(f *testing.F) {
	mnist, err := os.ReadFile("testdata/kubeflow-dist-mnist.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(mnist)
	for _, s := range []string{
		"apiVersion: tfk8s.io/v1alpha1\nkind: TFJob\nmetadata: {name: a}\nspec: {tfReplicaSpecs: {Worker: {replicas: 2}}}\nstatus: {state: Running}\n",
		"apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  runPolicy: {managedBy: kubeflow.org/training-operator}\n  tfReplicaSpecs: {worker: {replicas: 1}, PS: {replicas: 1}}\n",
		"apiVersion: kubeflow.org/v1\nkind: TFJob\nspec: {tfReplicaSpecs: {worker: {}, WORKER: {}}}\n",
		"apiVersion: kubeflow.org/v1\nkind: TFJob\nspec: {tfReplicaSpecs: [1]}\n",
		"apiVersion: kubeflow.org/v1\nkind: TFJob\nspec: 3\n",
		`{"apiVersion":"tfk8s.io/v1alpha1","kind":"TFJob","spec":{"cleanPodPolicy":"All"}}`,
		"apiVersion: tfk8s.io/v1alpha1\nkind: TFJob\n---\napiVersion: tfk8s.io/v1alpha1\nkind: TFJob\n",
		"apiVersion: tfk8s.io/v1alpha1\nkind: TFJob\nmetadata: {name: a, name: b}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		job, err := Decode(data)
		if err != nil {
			return
		}
		if job.APIVersion != tfv1.GroupVersion.String() || job.Kind != "TFJob" {
			t.Errorf("decoded as %s %s", job.APIVersion, job.Kind)
		}
		if job.Status.State != "" || len(job.Status.Conditions) > 0 {
			t.Errorf("the status was kept: %+v", job.Status)
		}
		if obj, err := singleDocument(data); err == nil && obj["apiVersion"] == kubeflowAPIVersion {
			for rt := range job.Spec.TFReplicaSpecs {
				if !slices.Contains(tfv1.ReplicaTypes, rt) {
					t.Errorf("a Kubeflow job converted with replica type %q", rt)
				}
			}
			if mb := job.Spec.RunPolicy.ManagedBy; mb != nil && *mb == kubeflowManagedBy {
				t.Errorf("a Kubeflow job converted with Kubeflow's managedBy")
			}
		}
		js, err := json.Marshal(job)
		if err != nil {
			t.Fatalf("the job does not encode: %v", err)
		}
		again, err := Decode(js)
		if err != nil {
			t.Fatalf("the job written out does not decode: %v\n%s", err, js)
		}
		if diff := cmp.Diff(job, again); diff != "" {
			t.Errorf("decoded, written and decoded again (-first +again):\n%s", diff)
		}
	})
}
