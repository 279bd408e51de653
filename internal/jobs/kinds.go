package jobs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
)

// The front ends show Kubeflow's kubeflow.org/v1 TFJobs beside tfk8s.io's, each as the
// tfk8s model (kubeflow.ToModel), whose TypeMeta says which it was read as. A job is
// named by its name alone (the tfk8s.io job of that name first) or as <group>/<name>.

var (
	ownGroup      = tfv1.GroupVersion.Group
	kubeflowGroup = kubeflowv1.GroupVersion.Group
)

// SplitRef is the group a job reference names ("" for either) and the job's name:
// "kubeflow.org/mnist" names the Kubeflow TFJob mnist, "mnist" either.
func SplitRef(ref string) (group, name string) {
	for _, g := range []string{ownGroup, kubeflowGroup} {
		if n, ok := strings.CutPrefix(ref, g+"/"); ok {
			return g, n
		}
	}
	return "", ref
}

// RefOf names job as SplitRef reads it: a Kubeflow job with its group, so that the
// name shown is one every command takes even where a tfk8s.io job has the same name.
func RefOf(job *tfv1.TFJob) string {
	if kubeflow.IsKubeflow(job) {
		return kubeflowGroup + "/" + job.Name
	}
	return job.Name
}

// ResourceOf is the job's resource as kubectl prints it: tfjob.tfk8s.io or
// tfjob.kubeflow.org.
func ResourceOf(job *tfv1.TFJob) string {
	return "tfjob." + kubeflow.GVKOf(job).Group
}

// Get reads the job ref names. A name without its group names the tfk8s.io job of that
// name, else the Kubeflow one, as List prints them; a missing job is a *NotFoundError,
// which apierrors.IsNotFound still recognises.
func Get(ctx context.Context, c client.Client, namespace, ref string) (*tfv1.TFJob, error) {
	group, name := SplitRef(ref)
	if group != kubeflowGroup {
		own, err := getOwn(ctx, c, namespace, name)
		if own != nil || err != nil {
			return own, err
		}
	}
	// The dashboard polls a job every few seconds: Kubeflow's is read only when the
	// tfk8s.io read found nothing and the API server serves the kind at all.
	if group != ownGroup && kubeflowServed(c) {
		kf, err := getKubeflow(ctx, c, namespace, name, group == "")
		if kf != nil || err != nil {
			return kf, err
		}
	}
	gr := schema.GroupResource{Group: cmp.Or(group, ownGroup), Resource: "tfjobs"}
	return nil, &NotFoundError{Namespace: namespace, Name: name, Err: apierrors.NewNotFound(gr, name)}
}

// kubeflowServed reports whether c's RESTMapper knows Kubeflow's TFJob, so that a cluster
// without it costs no read of a job that cannot exist.
func kubeflowServed(c client.Client) bool {
	_, err := c.RESTMapper().RESTMapping(kubeflow.GVK.GroupKind(), kubeflow.GVK.Version)
	return err == nil
}

func getOwn(ctx context.Context, c client.Client, namespace, name string) (*tfv1.TFJob, error) {
	job := &tfv1.TFJob{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading tfjob %s: %w", name, err)
	}
	return job, nil
}

// getKubeflow reads a Kubeflow TFJob as the model, nil when there is none or, when
// optional (the name given without its group), the user may not read it: they may
// have no rights on kubeflow.org at all.
func getKubeflow(ctx context.Context, c client.Client, namespace, name string, optional bool) (*tfv1.TFJob, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kubeflow.GVK)
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) || optional && apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading tfjob.kubeflow.org %s: %w", name, err)
	}
	return kubeflowModel(u)
}

// kubeflowModel converts a Kubeflow TFJob read as unstructured (the clients' scheme
// need not know the type) into the model.
func kubeflowModel(u *unstructured.Unstructured) (*tfv1.TFJob, error) {
	kf := &kubeflowv1.TFJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, kf); err != nil {
		return nil, fmt.Errorf("reading tfjob.kubeflow.org %s: %w", u.GetName(), err)
	}
	job := kubeflow.ToModel(kf)
	job.Status.State = kubeflowState(kf.Status.Conditions)
	return job, nil
}

// kubeflowState is the state a Kubeflow TFJob is in, as kubectl's column shows it for
// training-operator's jobs: its last condition that is True.
func kubeflowState(conds []kubeflowv1.JobCondition) tfv1.JobState {
	for i := len(conds) - 1; i >= 0; i-- {
		if conds[i].Status == corev1.ConditionTrue {
			return tfv1.JobState(conds[i].Type)
		}
	}
	return ""
}

// List lists the jobs of both groups, sorted by namespace and name, tfk8s.io's first
// of a name both have. Kubeflow's are left out where their CRD is not served or the
// user may not list them.
func List(ctx context.Context, c client.Client, opts ...client.ListOption) ([]tfv1.TFJob, error) {
	own := &tfv1.TFJobList{}
	if err := c.List(ctx, own, opts...); err != nil {
		return nil, fmt.Errorf("listing tfjobs: %w", err)
	}
	found := own.Items
	kf := &unstructured.UnstructuredList{}
	kf.SetGroupVersionKind(kubeflowv1.GroupVersion.WithKind("TFJobList"))
	err := c.List(ctx, kf, opts...)
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("listing tfjobs.kubeflow.org: %w", err)
	default:
		for i := range kf.Items {
			job, err := kubeflowModel(&kf.Items[i])
			if err != nil {
				return nil, err
			}
			found = append(found, *job)
		}
	}
	slices.SortStableFunc(found, func(a, b tfv1.TFJob) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return found, nil
}

// KubeflowExtrasError refuses what only a tfk8s.io TFJob has (code, data, artifacts,
// runs, TensorBoard) to a kubeflow.org one, and says how to move it over.
type KubeflowExtrasError struct {
	// Namespace is the job's, "" when only its reference was read.
	Namespace, Name string
	// What is what was asked for: "files in S3", "runs", "TensorBoard".
	What string
}

func (e *KubeflowExtrasError) Error() string {
	return fmt.Sprintf("tfjob.kubeflow.org/%s has no %s: code, data, artifacts, runs and TensorBoard are tfk8s.io TFJobs' alone; "+
		"move the job to tfk8s.io with tfk8s render --to tfk8s (docs/kubeflow.md)", e.Name, e.What)
}

// RefuseKubeflowExtras is a *KubeflowExtrasError when job was read as a kubeflow.org
// TFJob, else nil.
func RefuseKubeflowExtras(job *tfv1.TFJob, what string) error {
	if job == nil || !kubeflow.IsKubeflow(job) {
		return nil
	}
	return &KubeflowExtrasError{Namespace: job.Namespace, Name: job.Name, What: what}
}

// RefuseKubeflowRef is a *KubeflowExtrasError when ref names a kubeflow.org TFJob by
// its group (kubeflow.org/NAME), which JOB/RUN would otherwise read as a run. It reads
// nothing, so that a command on runs alone needs no cluster.
func RefuseKubeflowRef(ref, what string) error {
	if group, name := SplitRef(ref); group == kubeflowGroup {
		return &KubeflowExtrasError{Name: name, What: what}
	}
	return nil
}

// Delete deletes the object job was read from, of its own group.
func Delete(ctx context.Context, c client.Client, job *tfv1.TFJob, opts ...client.DeleteOption) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(kubeflow.GVKOf(job))
	obj.SetNamespace(job.Namespace)
	obj.SetName(job.Name)
	if err := c.Delete(ctx, obj, opts...); err != nil {
		if apierrors.IsNotFound(err) {
			return &NotFoundError{Namespace: job.Namespace, Name: job.Name, Err: err}
		}
		return fmt.Errorf("deleting %s %s: %w", ResourceOf(job), job.Name, err)
	}
	return nil
}
