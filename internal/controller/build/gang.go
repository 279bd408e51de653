package build

import (
	"cmp"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	pluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// DefaultSchedulerPluginsScheduler is the scheduler name the pods of a scheduler-plugins
// gang ask for: the name the scheduler-plugins install gives its scheduler.
const DefaultSchedulerPluginsScheduler = "scheduler-plugins-scheduler"

// volcanoScheduler is the scheduler name of Volcano's scheduler.
const volcanoScheduler = "volcano"

// GangOptions are the controller's gang scheduling settings.
type GangOptions struct {
	// DefaultProvider is the gang scheduler of jobs that name none; "" for none.
	DefaultProvider tfv1.GangProvider
	// SchedulerPluginsScheduler is the schedulerName of the pods of scheduler-plugins
	// gangs; DefaultSchedulerPluginsScheduler when empty.
	SchedulerPluginsScheduler string
}

// GangProvider is the gang scheduler of the job: its own, else the controller's default.
func GangProvider(job *tfv1.TFJob, def tfv1.GangProvider) tfv1.GangProvider {
	if sp := job.Spec.RunPolicy.SchedulingPolicy; sp != nil && sp.Provider != "" {
		return sp.Provider
	}
	return def
}

// gangMinMember is how many pods must be placed at once: minAvailable, else (unset or
// 0) every replica of the job.
func gangMinMember(job *tfv1.TFJob) int32 {
	if sp := job.Spec.RunPolicy.SchedulingPolicy; sp != nil && sp.MinAvailable != nil && *sp.MinAvailable > 0 {
		return *sp.MinAvailable
	}
	return tfjob.TotalReplicas(job)
}

// gangMinResources is the total the gang needs: minResources, else the sum of the
// requests of every replica's containers (a resource limited but not requested counts
// its limit, as the API server defaults the request to it).
func gangMinResources(job *tfv1.TFJob) corev1.ResourceList {
	if sp := job.Spec.RunPolicy.SchedulingPolicy; sp != nil && len(sp.MinResources) > 0 {
		return sp.MinResources.DeepCopy()
	}
	total := corev1.ResourceList{}
	for _, spec := range job.Spec.TFReplicaSpecs {
		n := int64(tfjob.Replicas(spec))
		for _, c := range spec.Template.Spec.Containers {
			req := c.Resources.Requests
			for name, q := range c.Resources.Limits {
				if _, ok := req[name]; !ok {
					addQuantity(total, name, q, n)
				}
			}
			for name, q := range req {
				addQuantity(total, name, q, n)
			}
		}
	}
	if len(total) == 0 {
		return nil
	}
	return total
}

// addQuantity adds n times q to the total of name.
func addQuantity(total corev1.ResourceList, name corev1.ResourceName, q resource.Quantity, n int64) {
	sum := total[name]
	for range n {
		sum.Add(q)
	}
	total[name] = sum
}

// gangMeta is the metadata of a job's group object: named after the job, labelled with
// it, and owned by it, so that deleting the job deletes its group.
func gangMeta(job *tfv1.TFJob) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            job.Name,
		Namespace:       job.Namespace,
		Labels:          map[string]string{tfv1.LabelJobName: job.Name},
		OwnerReferences: []metav1.OwnerReference{OwnerRef(job)},
	}
}

// Gang builds the job's group object for provider, or nil for none. A native
// PodGroup is written as version (v1beta1 when empty), which discovery chooses.
func Gang(job *tfv1.TFJob, provider tfv1.GangProvider, version string) client.Object {
	sp := job.Spec.RunPolicy.SchedulingPolicy
	if sp == nil {
		sp = &tfv1.SchedulingPolicy{}
	}
	switch provider {
	case tfv1.GangProviderNative:
		return nativeGang(job, cmp.Or(version, NativeVersions[0]))
	case tfv1.GangProviderVolcano:
		spec := volcanov1beta1.PodGroupSpec{
			MinMember:         gangMinMember(job),
			Queue:             sp.Queue,
			PriorityClassName: sp.PriorityClass,
		}
		if res := gangMinResources(job); res != nil {
			spec.MinResources = &res
		}
		return &volcanov1beta1.PodGroup{ObjectMeta: gangMeta(job), Spec: spec}
	case tfv1.GangProviderSchedulerPlugins:
		return &pluginsv1alpha1.PodGroup{ObjectMeta: gangMeta(job), Spec: pluginsv1alpha1.PodGroupSpec{
			MinMember:              gangMinMember(job),
			MinResources:           gangMinResources(job),
			ScheduleTimeoutSeconds: sp.ScheduleTimeoutSeconds,
		}}
	}
	return nil
}

// nativeGang is the job's native PodGroup as version, unstructured: the API types tfk8s
// builds against have one version of it, the clusters it runs on serve one of two.
func nativeGang(job *tfv1.TFJob, version string) *unstructured.Unstructured {
	meta := gangMeta(job)
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"schedulingPolicy": map[string]any{
			"gang": map[string]any{"minCount": int64(gangMinMember(job))},
		}},
	}}
	u.SetGroupVersionKind(NativePodGroup.WithVersion(version))
	u.SetName(meta.Name)
	u.SetNamespace(meta.Namespace)
	u.SetLabels(meta.Labels)
	u.SetOwnerReferences(meta.OwnerReferences)
	return u
}

// bindToGang makes pod a member of its job's group, the way provider's scheduler finds
// the members: a field of the pod (native), an annotation (Volcano) or a label
// (scheduler-plugins); the latter two also name their scheduler.
func bindToGang(pod *corev1.Pod, job *tfv1.TFJob, provider tfv1.GangProvider, opts GangOptions) {
	name := job.Name
	switch provider {
	case tfv1.GangProviderNative:
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	case tfv1.GangProviderVolcano:
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[volcanov1beta1.KubeGroupNameAnnotationKey] = name
		pod.Spec.SchedulerName = volcanoScheduler
	case tfv1.GangProviderSchedulerPlugins:
		pod.Labels[pluginsv1alpha1.PodGroupLabel] = name
		pod.Spec.SchedulerName = opts.SchedulerPluginsScheduler
		if pod.Spec.SchedulerName == "" {
			pod.Spec.SchedulerName = DefaultSchedulerPluginsScheduler
		}
	}
}

// NativePodGroup is Kubernetes' own PodGroup. Kubernetes 1.37 serves it as v1beta1 and
// 1.36 as v1alpha2: the same spec (schedulingPolicy.gang.minCount) in both, and pods
// join it through spec.schedulingGroup in both.
var (
	NativePodGroup = schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PodGroup"}
	NativeVersions = []string{"v1beta1", "v1alpha2"}
)
