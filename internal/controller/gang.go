package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	pluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// ParseGangProvider reads a --gang-scheduler value: none (or empty), native, volcano or
// scheduler-plugins.
func ParseGangProvider(s string) (tfv1.GangProvider, error) {
	switch p := tfv1.GangProvider(s); p {
	case "", "none":
		return "", nil
	case tfv1.GangProviderNative, tfv1.GangProviderVolcano, tfv1.GangProviderSchedulerPlugins:
		return p, nil
	}
	return "", fmt.Errorf("%q is not a gang scheduler: want none, native, volcano or scheduler-plugins", s)
}

// AddGangTypes adds the group objects of the gang schedulers to a scheme, so that the
// controller's client can create them (whether their API is served is checked per job).
func AddGangTypes(s *runtime.Scheme) {
	utilruntime.Must(volcanov1beta1.AddToScheme(s))
	utilruntime.Must(pluginsv1alpha1.AddToScheme(s))
}

// gangKinds are the group object kinds of each provider, with the versions tfk8s speaks,
// newest first: the first one the API server serves is used.
var gangKinds = map[tfv1.GangProvider]gangKind{
	tfv1.GangProviderNative:           {build.NativePodGroup, build.NativeVersions},
	tfv1.GangProviderVolcano:          {volcanov1beta1.SchemeGroupVersion.WithKind("PodGroup").GroupKind(), []string{volcanov1beta1.SchemeGroupVersion.Version}},
	tfv1.GangProviderSchedulerPlugins: {pluginsv1alpha1.SchemeGroupVersion.WithKind("PodGroup").GroupKind(), []string{pluginsv1alpha1.SchemeGroupVersion.Version}},
}

// gangKind is a group object's kind and the versions of it tfk8s can write.
type gangKind struct {
	schema.GroupKind
	versions []string
}
