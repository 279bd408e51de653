// Package kubeflow converts between Kubeflow's kubeflow.org/v1 TFJob and tfk8s's own
// model, tfk8s.io/v1alpha1, so that one reconciler serves both. The conversions are pure:
// no client, no clock but the one passed in.
package kubeflow

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// GVK is the kind of a Kubeflow TFJob. The model of a job read as one carries it in its
// TypeMeta, so that what the controller builds for it (owner references, labels, events)
// refers to the object the user created.
var GVK = kubeflowv1.GroupVersion.WithKind("TFJob")

// IsKubeflow reports whether the model job was read as a kubeflow.org TFJob.
func IsKubeflow(job *tfv1.TFJob) bool {
	return job.GroupVersionKind().Group == kubeflowv1.GroupVersion.Group
}

// GVKOf is the kind of the object the model job was read from.
func GVKOf(job *tfv1.TFJob) schema.GroupVersionKind {
	if IsKubeflow(job) {
		return GVK
	}
	return tfv1.GroupVersion.WithKind("TFJob")
}

// ToModel is the tfk8s model of a Kubeflow TFJob, with the defaults training-operator
// v1.9 applies in its controller: replica types spelled canonically, replicas 1,
// restartPolicy Never, the port tfjob-port 2222 on the tensorflow container,
// cleanPodPolicy None, successPolicy "". tfk8s's own fields take the values a
// tfk8s.io job gets by default: Parallel startup, DNS networking.
func ToModel(kf *kubeflowv1.TFJob) *tfv1.TFJob {
	job := &tfv1.TFJob{ObjectMeta: *kf.ObjectMeta.DeepCopy()}
	job.SetGroupVersionKind(GVK)
	job.Spec = tfv1.TFJobSpec{
		TFReplicaSpecs:      replicaSpecsToModel(kf.Spec.TFReplicaSpecs),
		RunPolicy:           runPolicyToModel(&kf.Spec.RunPolicy),
		SuccessPolicy:       ptr.To(tfv1.SuccessPolicy(ptr.Deref(kf.Spec.SuccessPolicy, ""))),
		EnableDynamicWorker: kf.Spec.EnableDynamicWorker,
		StartupPolicy:       tfv1.StartupPolicyParallel,
		Networking:          tfv1.Networking{Mode: tfv1.NetworkingModeDNS},
	}
	job.Status = StatusToModel(&kf.Status)
	return job
}

// CanonicalType is the replica type key spelled as tfk8s spells it, whatever its case
// ("worker" is Worker); ok is false for a key that names no replica type.
func CanonicalType(key kubeflowv1.ReplicaType) (tfv1.ReplicaType, bool) {
	for _, rt := range tfv1.ReplicaTypes {
		if strings.EqualFold(string(key), string(rt)) {
			return rt, true
		}
	}
	return "", false
}

func replicaSpecsToModel(in map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec) map[tfv1.ReplicaType]*tfv1.ReplicaSpec {
	out := make(map[tfv1.ReplicaType]*tfv1.ReplicaSpec, len(in))
	// Admission refuses unknown types. A type spelled twice ("Worker" and "worker")
	// is taken from its canonical spelling, else from the first in sorted order: the
	// outcome never depends on map order.
	keys := slices.SortedFunc(maps.Keys(in), func(a, b kubeflowv1.ReplicaType) int {
		if ca, cb := isCanonical(a), isCanonical(b); ca != cb {
			return map[bool]int{true: -1, false: 1}[ca]
		}
		return cmp.Compare(a, b)
	})
	for _, key := range keys {
		spec := in[key]
		rt, ok := CanonicalType(key)
		if !ok || spec == nil || out[rt] != nil {
			continue
		}
		out[rt] = &tfv1.ReplicaSpec{
			Replicas:      ptr.To(max(0, ptr.Deref(spec.Replicas, 1))),
			Template:      *withDefaultPort(spec.Template.DeepCopy()),
			RestartPolicy: tfv1.RestartPolicy(spec.RestartPolicy),
		}
		if spec.RestartPolicy == "" {
			out[rt].RestartPolicy = tfv1.RestartPolicyNever
		}
	}
	return out
}

// isCanonical reports whether key is a replica type spelled as tfk8s spells it.
func isCanonical(key kubeflowv1.ReplicaType) bool {
	rt, ok := CanonicalType(key)
	return ok && string(rt) == string(key)
}

// withDefaultPort adds the port tfjob-port 2222 to the container named tensorflow (else
// the first) when it has no port of that name, as v1.9 does.
func withDefaultPort(tmpl *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	cs := tmpl.Spec.Containers
	if len(cs) == 0 {
		return tmpl
	}
	i := 0
	for j := range cs {
		if cs[j].Name == kubeflowv1.DefaultContainerName {
			i = j
			break
		}
	}
	for _, p := range cs[i].Ports {
		if p.Name == kubeflowv1.DefaultPortName {
			return tmpl
		}
	}
	cs[i].Ports = append(cs[i].Ports, corev1.ContainerPort{Name: kubeflowv1.DefaultPortName, ContainerPort: kubeflowv1.DefaultPort})
	return tmpl
}

func runPolicyToModel(in *kubeflowv1.RunPolicy) tfv1.RunPolicy {
	clean := tfv1.CleanPodPolicyNone
	if in.CleanPodPolicy != nil && *in.CleanPodPolicy != "" {
		clean = tfv1.CleanPodPolicy(*in.CleanPodPolicy)
	}
	out := tfv1.RunPolicy{
		CleanPodPolicy:          &clean,
		TTLSecondsAfterFinished: clone(in.TTLSecondsAfterFinished),
		ActiveDeadlineSeconds:   clone(in.ActiveDeadlineSeconds),
		BackoffLimit:            clone(in.BackoffLimit),
		Suspend:                 clone(in.Suspend),
		ManagedBy:               clone(in.ManagedBy),
	}
	if sp := in.SchedulingPolicy; sp != nil {
		out.SchedulingPolicy = &tfv1.SchedulingPolicy{
			MinAvailable:           clone(sp.MinAvailable),
			Queue:                  sp.Queue,
			PriorityClass:          sp.PriorityClass,
			ScheduleTimeoutSeconds: clone(sp.ScheduleTimeoutSeconds),
		}
		if sp.MinResources != nil {
			out.SchedulingPolicy.MinResources = corev1.ResourceList(*sp.MinResources).DeepCopy()
		}
	}
	return out
}

// FromModel is the Kubeflow TFJob of a model job, without its status (StatusFromModel
// says it): the inverse of ToModel on the fields both APIs have. tfk8s's own fields (code, data, artifacts, storage, volumes,
// TensorBoard, networking, startup policy) have no place in it and are dropped.
func FromModel(job *tfv1.TFJob) *kubeflowv1.TFJob {
	kf := &kubeflowv1.TFJob{ObjectMeta: *job.ObjectMeta.DeepCopy()}
	kf.SetGroupVersionKind(GVK)
	kf.Spec.EnableDynamicWorker = job.Spec.EnableDynamicWorker
	if job.Spec.SuccessPolicy != nil {
		kf.Spec.SuccessPolicy = ptr.To(kubeflowv1.SuccessPolicy(*job.Spec.SuccessPolicy))
	}
	kf.Spec.TFReplicaSpecs = make(map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec, len(job.Spec.TFReplicaSpecs))
	for rt, spec := range job.Spec.TFReplicaSpecs {
		if spec == nil {
			continue
		}
		kf.Spec.TFReplicaSpecs[kubeflowv1.ReplicaType(rt)] = &kubeflowv1.ReplicaSpec{
			Replicas:      clone(spec.Replicas),
			Template:      *spec.Template.DeepCopy(),
			RestartPolicy: kubeflowv1.RestartPolicy(spec.RestartPolicy),
		}
	}
	rp := &job.Spec.RunPolicy
	kf.Spec.RunPolicy = kubeflowv1.RunPolicy{
		TTLSecondsAfterFinished: clone(rp.TTLSecondsAfterFinished),
		ActiveDeadlineSeconds:   clone(rp.ActiveDeadlineSeconds),
		BackoffLimit:            clone(rp.BackoffLimit),
		Suspend:                 clone(rp.Suspend),
		ManagedBy:               clone(rp.ManagedBy),
	}
	if rp.CleanPodPolicy != nil {
		kf.Spec.RunPolicy.CleanPodPolicy = ptr.To(kubeflowv1.CleanPodPolicy(*rp.CleanPodPolicy))
	}
	if sp := rp.SchedulingPolicy; sp != nil {
		kf.Spec.RunPolicy.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{
			MinAvailable:           clone(sp.MinAvailable),
			Queue:                  sp.Queue,
			PriorityClass:          sp.PriorityClass,
			ScheduleTimeoutSeconds: clone(sp.ScheduleTimeoutSeconds),
		}
		if sp.MinResources != nil {
			mr := map[corev1.ResourceName]resource.Quantity(sp.MinResources.DeepCopy())
			kf.Spec.RunPolicy.SchedulingPolicy.MinResources = &mr
		}
	}
	return kf
}

// clone is a pointer to a copy of *p, or nil.
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
