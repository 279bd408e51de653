package jobspec

import (
	"sigs.k8s.io/yaml"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// ForPrinting returns a copy of job as kubectl prints one: with its apiVersion and
// kind set and without managedFields.
func ForPrinting(job *tfv1.TFJob) *tfv1.TFJob {
	job = job.DeepCopy()
	job.APIVersion, job.Kind = tfv1.GroupVersion.String(), "TFJob"
	job.ManagedFields = nil
	return job
}

// YAML is the job as tfk8s render and tfk8s get -o yaml print it.
func YAML(job *tfv1.TFJob) ([]byte, error) {
	return yaml.Marshal(ForPrinting(job))
}
