package build

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	pluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/fixtures"
)

// TestConstructGang checks each provider's group object: named after and owned by the
// job, minMember from minAvailable or every replica, minResources given or summed.
func TestConstructGang(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "mnist", Namespace: "ml", Labels: map[string]string{tfv1.LabelJobName: "mnist"},
		OwnerReferences: []metav1.OwnerReference{ownerRef}}
	summed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"),
		corev1.ResourceMemory: resource.MustParse("3Gi"), "nvidia.com/gpu": resource.MustParse("2")}
	given := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	cases := []struct {
		name     string
		provider tfv1.GangProvider
		sp       *tfv1.SchedulingPolicy
		want     client.Object
	}{{
		name: "volcano, resources summed", provider: tfv1.GangProviderVolcano,
		sp: &tfv1.SchedulingPolicy{Queue: "research", PriorityClass: "high"},
		want: &volcanov1beta1.PodGroup{ObjectMeta: meta, Spec: volcanov1beta1.PodGroupSpec{
			MinMember: 3, Queue: "research", PriorityClassName: "high", MinResources: &summed}},
	}, {
		name: "scheduler-plugins, resources given", provider: tfv1.GangProviderSchedulerPlugins,
		sp: &tfv1.SchedulingPolicy{MinAvailable: ptr.To[int32](1), MinResources: given, ScheduleTimeoutSeconds: ptr.To[int32](60)},
		want: &pluginsv1alpha1.PodGroup{ObjectMeta: meta, Spec: pluginsv1alpha1.PodGroupSpec{
			MinMember: 1, MinResources: given, ScheduleTimeoutSeconds: ptr.To[int32](60)}},
	}, {
		name: "none", provider: "", want: nil,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Gang(fixtures.GangJob(tc.sp), tc.provider, "")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("group (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConstructNativeGang: Kubernetes' own PodGroup is written in the version discovery
// found, with the same spec in both: minCount from minAvailable or every replica.
func TestConstructNativeGang(t *testing.T) {
	meta := `"metadata":{"labels":{"tfk8s.io/job-name":"mnist"},"name":"mnist","namespace":"ml",` +
		`"ownerReferences":[{"apiVersion":"tfk8s.io/v1alpha1","blockOwnerDeletion":true,"controller":true,"kind":"TFJob","name":"mnist","uid":"uid-1"}]}`
	cases := []struct {
		name, version string
		sp            *tfv1.SchedulingPolicy
		want          string
	}{
		{"1.37, every replica", "v1beta1", nil,
			`{"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup",` + meta + `,"spec":{"schedulingPolicy":{"gang":{"minCount":3}}}}`},
		{"1.36, minAvailable", "v1alpha2", &tfv1.SchedulingPolicy{MinAvailable: ptr.To[int32](2)},
			`{"apiVersion":"scheduling.k8s.io/v1alpha2","kind":"PodGroup",` + meta + `,"spec":{"schedulingPolicy":{"gang":{"minCount":2}}}}`},
		{"no version found yet", "", nil,
			`{"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup",` + meta + `,"spec":{"schedulingPolicy":{"gang":{"minCount":3}}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(Gang(fixtures.GangJob(tc.sp), tfv1.GangProviderNative, tc.version))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("PodGroup (-want +got):\n%s", diff)
			}
		})
	}
}

// gangBinding is what binds a pod to its group, for each provider.
type gangBinding struct {
	SchedulerName   string
	SchedulingGroup *corev1.PodSchedulingGroup
	GroupAnnotation string
	GroupLabel      string
}

// TestConstructPodJoinsGang checks that every pod names its group the way its
// provider's scheduler looks for it, with the job's provider before the controller's.
func TestConstructPodJoinsGang(t *testing.T) {
	cases := []struct {
		name string
		job  tfv1.GangProvider
		opts GangOptions
		want gangBinding
	}{
		{name: "none"},
		{name: "native", job: tfv1.GangProviderNative,
			want: gangBinding{SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("mnist")}}},
		{name: "volcano from the controller's default", opts: GangOptions{DefaultProvider: tfv1.GangProviderVolcano},
			want: gangBinding{SchedulerName: "volcano", GroupAnnotation: "mnist"}},
		{name: "job's provider first", job: tfv1.GangProviderSchedulerPlugins, opts: GangOptions{DefaultProvider: tfv1.GangProviderVolcano},
			want: gangBinding{SchedulerName: "scheduler-plugins-scheduler", GroupLabel: "mnist"}},
		{name: "scheduler-plugins scheduler named", job: tfv1.GangProviderSchedulerPlugins, opts: GangOptions{SchedulerPluginsScheduler: "coscheduler"},
			want: gangBinding{SchedulerName: "coscheduler", GroupLabel: "mnist"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := fixtures.GangJob(&tfv1.SchedulingPolicy{Provider: tc.job})
			pod := buildPod(t, job, tfv1.ReplicaTypeWorker, 1, PodOptions{Gang: tc.opts})
			got := gangBinding{
				SchedulerName:   pod.Spec.SchedulerName,
				SchedulingGroup: pod.Spec.SchedulingGroup,
				GroupAnnotation: pod.Annotations["scheduling.k8s.io/group-name"],
				GroupLabel:      pod.Labels["scheduling.x-k8s.io/pod-group"],
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("binding (-want +got):\n%s", diff)
			}
		})
	}
}
