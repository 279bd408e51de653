package controller

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// The controller's memory is its cache: with 5,000 jobs and their 20,000 pods, the
// objects as the API server sends them (managed fields, admission's projected token
// volumes and tolerations, every container's image, resources and environment) make
// most of it. The cache keeps only what a reconcile reads; reading more means keeping
// more here first (TestStrippedPodsObserveTheSame checks that reconciles decide the
// same on what is kept as on whole pods).

// lastApplied is the annotation kubectl apply writes: a second copy of the object.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// CacheOptions make the manager's cache hold only what tfk8s reads: the pods,
// Services and Deployments of TFJobs (by their job-name label), each stripped of what
// no reconcile reads. With full, objects are cached whole, as they come from the API
// server: only to measure what stripping saves.
func CacheOptions(full bool) cache.Options {
	hasJob, err := labels.NewRequirement(tfv1.LabelJobName, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	byJob := labels.NewSelector().Add(*hasJob)
	if full {
		return cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:        {Label: byJob},
			&corev1.Service{}:    {Label: byJob},
			&appsv1.Deployment{}: {Label: byJob},
		}}
	}
	// One entry per kind: the map is keyed by pointer, so a second &corev1.Pod{} would
	// be a second entry, of which the cache would take either.
	return cache.Options{
		DefaultTransform: stripMetadata,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: byJob, Transform: stripPod},
			// A Service is only looked up by name: is it there, and whose is it.
			&corev1.Service{}: {Label: byJob, Transform: keepMetadataOnly},
			// A job's TensorBoard.
			&appsv1.Deployment{}: {Label: byJob, Transform: stripDeployment},
		},
	}
}

// stripMetadata drops the managed fields and kubectl's last applied configuration,
// which tfk8s never reads, from a cached object, and keeps one copy of the strings
// thousands of cached objects repeat: namespaces, owners' kinds, finalizers.
func stripMetadata(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	if a := o.GetAnnotations(); a[lastApplied] != "" {
		delete(a, lastApplied)
		o.SetAnnotations(a)
	}
	o.SetNamespace(intern(o.GetNamespace()))
	refs := o.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind = intern(refs[i].APIVersion), intern(refs[i].Kind)
	}
	finalizers := o.GetFinalizers()
	for i := range finalizers {
		finalizers[i] = intern(finalizers[i])
	}
	return obj, nil
}

// interned holds the one copy of each string intern was given. Only strings of few
// values are interned (namespaces, kinds, finalizers, replica types): each namespace
// that ever held a TFJob costs its name once for the controller's life.
var interned sync.Map

// intern returns the one copy of s: each object decoded from the API server carries its
// own copy of every string, and a cache of 20,000 pods held 20,000 copies of its namespace.
func intern(s string) string {
	if v, ok := interned.Load(s); ok {
		return v.(string)
	}
	v, _ := interned.LoadOrStore(s, s)
	return v.(string)
}

// keepMetadataOnly caches a Service as its metadata alone.
func keepMetadataOnly(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Service{TypeMeta: svc.TypeMeta, ObjectMeta: svc.ObjectMeta}
	return stripMetadata(kept)
}

// stripDeployment caches a TensorBoard Deployment as its metadata and status: tfk8s
// reads whether its replicas are ready.
func stripDeployment(obj any) (any, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil
	}
	kept := &appsv1.Deployment{TypeMeta: d.TypeMeta, ObjectMeta: d.ObjectMeta, Status: d.Status}
	return stripMetadata(kept)
}
