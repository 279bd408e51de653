package api

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// validJob is a chief + 2 PS + 3 workers job that every invalid case starts from.
func validJob(ns string) *testutil.TFJobWrapper {
	return testutil.MakeTFJob("mnist", ns).Chief().PS(2).Workers(3)
}

func TestInvalidTFJobsAreRefused(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	cases := []struct {
		name string
		job  *tfv1.TFJob
		// wantField and wantMsg must both appear in the API server's error.
		wantField string
		wantMsg   string
	}{
		{
			name:      "unknown replica type",
			job:       validJob(ns).Replicas("Trainer", 1).Obj(),
			wantField: "spec.tfReplicaSpecs",
			wantMsg:   "unknown replica type",
		},
		{
			name:      "lower-case replica type",
			job:       validJob(ns).Replicas("worker", 1).Obj(),
			wantField: "spec.tfReplicaSpecs",
			wantMsg:   "unknown replica type",
		},
		{
			name:      "negative replicas",
			job:       validJob(ns).Workers(-1).Obj(),
			wantField: "spec.tfReplicaSpecs.Worker.replicas",
			wantMsg:   "greater than or equal to 0",
		},
		{
			name:      "too many replicas",
			job:       testutil.MakeTFJob("w", ns).Workers(100001).Obj(),
			wantField: "spec.tfReplicaSpecs.Worker.replicas",
			wantMsg:   "less than or equal to 100000",
		},
		{
			name:      "chief and master together",
			job:       validJob(ns).Master().Obj(),
			wantField: "spec.tfReplicaSpecs",
			wantMsg:   "Chief and Master cannot both be set",
		},
		{
			name:      "two chiefs",
			job:       validJob(ns).Replicas(tfv1.ReplicaTypeChief, 2).Obj(),
			wantField: "spec.tfReplicaSpecs[Chief].replicas",
			wantMsg:   "at most one Chief",
		},
		{
			name:      "two masters",
			job:       testutil.MakeTFJob("mnist", ns).Replicas(tfv1.ReplicaTypeMaster, 2).Workers(2).Obj(),
			wantField: "spec.tfReplicaSpecs[Master].replicas",
			wantMsg:   "at most one Master",
		},
		{
			name:      "two evaluators",
			job:       validJob(ns).Replicas(tfv1.ReplicaTypeEvaluator, 2).Obj(),
			wantField: "spec.tfReplicaSpecs[Evaluator].replicas",
			wantMsg:   "at most one Evaluator",
		},
		{
			name:      "parameter servers alone",
			job:       testutil.MakeTFJob("mnist", ns).PS(2).Obj(),
			wantField: "spec.tfReplicaSpecs",
			wantMsg:   "a job needs a Chief, a Master or a Worker",
		},
		{
			name:      "evaluator alone",
			job:       testutil.MakeTFJob("mnist", ns).Evaluator().Obj(),
			wantField: "spec.tfReplicaSpecs",
			wantMsg:   "a job needs a Chief, a Master or a Worker",
		},
		{
			name:      "no replicas at all",
			job:       testutil.MakeTFJob("mnist", ns).Obj(),
			wantField: "spec.tfReplicaSpecs",
			wantMsg:   "at least 1 properties",
		},
		{
			name:      "unknown restart policy",
			job:       validJob(ns).RestartPolicy(tfv1.ReplicaTypeWorker, "Sometimes").Obj(),
			wantField: "spec.tfReplicaSpecs.Worker.restartPolicy",
			wantMsg:   `Unsupported value: "Sometimes"`,
		},
		{
			name:      "unknown clean pod policy",
			job:       validJob(ns).CleanPodPolicy("Finished").Obj(),
			wantField: "spec.runPolicy.cleanPodPolicy",
			wantMsg:   `Unsupported value: "Finished"`,
		},
		{
			name:      "unknown success policy",
			job:       validJob(ns).SuccessPolicy("AnyWorker").Obj(),
			wantField: "spec.successPolicy",
			wantMsg:   `Unsupported value: "AnyWorker"`,
		},
		{
			name:      "unknown startup policy",
			job:       validJob(ns).StartupPolicy("WorkersFirst").Obj(),
			wantField: "spec.startupPolicy",
			wantMsg:   `Unsupported value: "WorkersFirst"`,
		},
		{
			name: "unknown networking mode",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Obj()
				j.Spec.Networking.Mode = "Overlay"
				return j
			}(),
			wantField: "spec.networking.mode",
			wantMsg:   `Unsupported value: "Overlay"`,
		},
		{
			name:      "negative backoff limit",
			job:       validJob(ns).BackoffLimit(-1).Obj(),
			wantField: "spec.runPolicy.backoffLimit",
			wantMsg:   "greater than or equal to 0",
		},
		{
			name:      "negative active deadline",
			job:       validJob(ns).ActiveDeadlineSeconds(-5).Obj(),
			wantField: "spec.runPolicy.activeDeadlineSeconds",
			wantMsg:   "greater than or equal to 0",
		},
		{
			name:      "negative TTL",
			job:       validJob(ns).TTLSecondsAfterFinished(-1).Obj(),
			wantField: "spec.runPolicy.ttlSecondsAfterFinished",
			wantMsg:   "greater than or equal to 0",
		},
		{
			name: "negative minAvailable",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Obj()
				j.Spec.RunPolicy.SchedulingPolicy = &tfv1.SchedulingPolicy{MinAvailable: ptr.To[int32](-1)}
				return j
			}(),
			wantField: "spec.runPolicy.schedulingPolicy.minAvailable",
			wantMsg:   "greater than or equal to 0",
		},
		{
			// 52 + len("-evaluator-0") = 64.
			name:      "name too long for the evaluator's pod",
			job:       testutil.MakeTFJob(strings.Repeat("a", 52), ns).Workers(1).Evaluator().Obj(),
			wantField: "metadata.name",
			wantMsg:   "must fit in a 63-character DNS label",
		},
		{
			// 53 + len("-worker-999") = 64.
			name:      "name too long for the last worker's pod",
			job:       testutil.MakeTFJob(strings.Repeat("b", 53), ns).Workers(1000).Obj(),
			wantField: "metadata.name",
			wantMsg:   "must fit in a 63-character DNS label",
		},
		{
			name: "name too long for TensorBoard",
			job: func() *tfv1.TFJob {
				j := testutil.MakeTFJob(strings.Repeat("c", 52), ns).Workers(1).Obj()
				j.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true}
				return j
			}(),
			wantField: "metadata.name",
			wantMsg:   "<name>-tensorboard must fit",
		},
		{
			name:      "name starting with a digit",
			job:       testutil.MakeTFJob("1mnist", ns).Workers(1).Obj(),
			wantField: "metadata.name",
			wantMsg:   "must be a DNS-1035 label",
		},
		{
			name:      "name with a dot",
			job:       testutil.MakeTFJob("mnist.v2", ns).Workers(1).Obj(),
			wantField: "metadata.name",
			wantMsg:   "must be a DNS-1035 label",
		},
		{
			name: "code while the tensorflow container has no command",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Code("s3://tfk8s/code/sha256-00.tar.gz").Obj()
				j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Command = nil
				return j
			}(),
			wantField: "spec.tfReplicaSpecs.Worker.template.spec.containers",
			wantMsg:   "needs a command",
		},
		{
			name: "artifacts while the tensorflow container has no command but a sidecar has",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Artifacts("s3://tfk8s/runs", "/ckpt").Obj()
				spec := &j.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS].Template.Spec
				spec.Containers[0].Command = nil
				spec.Containers = append(spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox", Command: []string{"sleep", "inf"}})
				return j
			}(),
			wantField: "spec.tfReplicaSpecs.PS.template.spec.containers",
			wantMsg:   "needs a command",
		},
		{
			name: "code without storage",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Code("s3://tfk8s/code/sha256-00.tar.gz").Obj()
				j.Spec.Storage = nil
				return j
			}(),
			wantField: "spec.storage",
			wantMsg:   "spec.storage.secretRef is required",
		},
		{
			name:      "code source that is not an S3 URI",
			job:       validJob(ns).Code("https://example.com/code.tar.gz").Obj(),
			wantField: "spec.code.source",
			wantMsg:   "should match",
		},
		{
			name: "code digest that is not a sha256",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Code("s3://tfk8s/code/x.tar.gz").Obj()
				j.Spec.Code.SHA256 = "abc"
				return j
			}(),
			wantField: "spec.code.sha256",
			wantMsg:   "should match",
		},
		{
			name: "relative data path",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Code("s3://tfk8s/code/x.tar.gz").Obj()
				j.Spec.Data = []tfv1.DataSource{{Source: "s3://tfk8s/data/", Path: "data"}}
				return j
			}(),
			wantField: "spec.data[0].path",
			wantMsg:   "should match",
		},
		{
			name: "negative artifact interval",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Artifacts("s3://tfk8s/runs", "/ckpt").Obj()
				j.Spec.Artifacts.Interval = &metav1.Duration{Duration: -1e9}
				return j
			}(),
			wantField: "spec.artifacts.interval",
			wantMsg:   "must not be negative",
		},
		{
			name: "template without containers",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Obj()
				j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers = []corev1.Container{}
				return j
			}(),
			wantField: "spec.tfReplicaSpecs.Worker.template.spec.containers",
			wantMsg:   "should have at least 1 items",
		},
		{
			name:      "zero-sized volume",
			job:       withVolumes(validJob(ns).Obj(), tfv1.JobVolume{Name: "data", MountPath: "/data", Size: ptr.To(resource.MustParse("0"))}),
			wantField: "spec.volumes[0].size",
			wantMsg:   "size must be greater than zero",
		},
		{
			name:      "volume with neither size nor existing claim",
			job:       withVolumes(validJob(ns).Obj(), tfv1.JobVolume{Name: "data", MountPath: "/data"}),
			wantField: "spec.volumes[0]",
			wantMsg:   "either size",
		},
		{
			name: "existing claim with a storage class",
			job: withVolumes(validJob(ns).Obj(), tfv1.JobVolume{Name: "data", MountPath: "/data", ExistingClaim: "shared",
				StorageClassName: ptr.To("fast")}),
			wantField: "spec.volumes[0]",
			wantMsg:   "not for an existingClaim",
		},
		{
			name: "two volumes at one mount path",
			job: withVolumes(validJob(ns).Obj(),
				tfv1.JobVolume{Name: "data", MountPath: "/data", Size: ptr.To(resource.MustParse("1Gi"))},
				tfv1.JobVolume{Name: "more", MountPath: "/data", Size: ptr.To(resource.MustParse("1Gi"))}),
			wantField: "spec.volumes",
			wantMsg:   "two volumes have the same mountPath",
		},
		{
			name:      "volume over the agent's directory",
			job:       withVolumes(validJob(ns).Obj(), tfv1.JobVolume{Name: "data", MountPath: "/tfk8s/bin", Size: ptr.To(resource.MustParse("1Gi"))}),
			wantField: "spec.volumes",
			wantMsg:   "the tfk8s agent's directory",
		},
		{
			name: "volume over the code",
			job: withVolumes(validJob(ns).Code("s3://tfk8s/code/sha256-00.tar.gz").Obj(),
				tfv1.JobVolume{Name: "data", MountPath: "/workspace", Size: ptr.To(resource.MustParse("1Gi"))}),
			wantField: "spec.volumes",
			wantMsg:   "spec.code.path",
		},
		{
			name: "volume over a container's own mount",
			job: func() *tfv1.TFJob {
				j := withVolumes(validJob(ns).Obj(), tfv1.JobVolume{Name: "data", MountPath: "/data", Size: ptr.To(resource.MustParse("1Gi"))})
				spec := &j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec
				spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
				spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: "/data"})
				return j
			}(),
			wantField: "spec.volumes",
			wantMsg:   "already mounted by a container of spec.tfReplicaSpecs.Worker",
		},
		{
			name: "TensorBoard with nothing to read",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Obj()
				j.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true}
				return j
			}(),
			wantField: "spec.tensorboard",
			wantMsg:   "no summaries to read",
		},
		{
			name: "TensorBoard over artifacts without paths",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Artifacts("s3://tfk8s/runs").Obj()
				j.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true}
				return j
			}(),
			wantField: "spec.tensorboard",
			wantMsg:   "set spec.artifacts.paths",
		},
		{
			name:      "minAvailable above the replicas",
			job:       withScheduling(validJob(ns).Obj(), tfv1.SchedulingPolicy{MinAvailable: ptr.To[int32](7)}),
			wantField: "spec.runPolicy.schedulingPolicy.minAvailable",
			wantMsg:   "more than the job's replicas",
		},
		{
			name: "minAvailable above the replicas, provider native",
			job: withScheduling(testutil.MakeTFJob("gpu", ns).Workers(5).Obj(),
				tfv1.SchedulingPolicy{Provider: tfv1.GangProviderNative, MinAvailable: ptr.To[int32](6)}),
			wantField: "spec.runPolicy.schedulingPolicy.minAvailable",
			wantMsg:   "more than the job's replicas",
		},
		{
			name:      "queue with provider native",
			job:       withScheduling(validJob(ns).Obj(), tfv1.SchedulingPolicy{Provider: tfv1.GangProviderNative, Queue: "research"}),
			wantField: "spec.runPolicy.schedulingPolicy.queue",
			wantMsg:   "provider volcano only",
		},
		{
			name:      "queue with provider scheduler-plugins",
			job:       withScheduling(validJob(ns).Obj(), tfv1.SchedulingPolicy{Provider: tfv1.GangProviderSchedulerPlugins, Queue: "research"}),
			wantField: "spec.runPolicy.schedulingPolicy.queue",
			wantMsg:   "provider volcano only",
		},
		{
			name: "minResources with provider native",
			job: withScheduling(validJob(ns).Obj(), tfv1.SchedulingPolicy{Provider: tfv1.GangProviderNative,
				MinResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}),
			wantField: "spec.runPolicy.schedulingPolicy.minResources",
			wantMsg:   "a native PodGroup has no minimum of resources",
		},
		{
			name: "TensorBoard logDir outside the volumes",
			job: func() *tfv1.TFJob {
				j := withVolumes(validJob(ns).Obj(), tfv1.JobVolume{Name: "logs", MountPath: "/logs", Size: ptr.To(resource.MustParse("1Gi"))})
				j.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true, LogDir: "/logsx/train"}
				return j
			}(),
			wantField: "spec.tensorboard.logDir",
			wantMsg:   "not in any of spec.volumes",
		},
		{
			name: "own resourceClaim named as deviceClaim's",
			job: func() *tfv1.TFJob {
				j := validJob(ns).Obj()
				w := j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker]
				w.DeviceClaim = &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com"}
				w.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "tfk8s-devices", ResourceClaimName: ptr.To("mine")}}
				return j
			}(),
			wantField: "spec.tfReplicaSpecs[Worker].template.spec.resourceClaims",
			wantMsg:   "the resourceClaim name tfk8s-devices is the claim tfk8s makes from deviceClaim",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := k8sClient.Create(context.Background(), tc.job)
			if err == nil {
				t.Fatalf("TFJob was accepted; want it refused naming %s", tc.wantField)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error is not Invalid: %v", err)
			}
			for _, want := range []string{tc.wantField, tc.wantMsg} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not contain %q:\n%v", want, err)
				}
			}
		})
	}
}

// withVolumes gives the job volumes.
func withVolumes(j *tfv1.TFJob, vs ...tfv1.JobVolume) *tfv1.TFJob {
	j.Spec.Volumes = vs
	return j
}

// TestVolumeSizeThatDoesNotParse sends what a typed client cannot: a size that is not a
// quantity.
func TestVolumeSizeThatDoesNotParse(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	job := validJob(ns).Obj()
	job.APIVersion, job.Kind = tfv1.GroupVersion.String(), "TFJob"
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: raw}
	if err := unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "data", "mountPath": "/data", "size": "ten gigs"}}, "spec", "volumes"); err != nil {
		t.Fatal(err)
	}
	err = k8sClient.Create(context.Background(), u)
	if err == nil || !strings.Contains(err.Error(), "spec.volumes[0].size") {
		t.Fatalf("a size of \"ten gigs\" gave %v; want an error naming spec.volumes[0].size", err)
	}
	t.Logf("refused: %v", err)
}
