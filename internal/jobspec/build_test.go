package jobspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// replica is a replica spec with one container, as submit builds it.
func replica(n int32, c corev1.Container) *tfv1.ReplicaSpec {
	return &tfv1.ReplicaSpec{
		Replicas: ptr.To(n),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}},
	}
}

func tfJob(name, ns string, specs map[tfv1.ReplicaType]*tfv1.ReplicaSpec) *tfv1.TFJob {
	return &tfv1.TFJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "tfk8s.io/v1alpha1", Kind: "TFJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       tfv1.TFJobSpec{TFReplicaSpecs: specs},
	}
}

// buildCase is a manifest (or none) and flags, and the job Build makes of them.
type buildCase struct {
	name string
	base *tfv1.TFJob
	p    Values
	want *tfv1.TFJob
}

func checkBuildJob(t *testing.T, cases []buildCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Build(tc.base, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildJob(t *testing.T) {
	python := []string{"python3", "train.py"}
	tf := corev1.Container{Name: "tensorflow", Image: "tf:2.16", Command: python}
	cpu, mem := resource.MustParse("2"), resource.MustParse("4Gi")
	withResources := func(c corev1.Container, gpus bool) corev1.Container {
		c.Resources = corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
			Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
		}
		if gpus {
			c.Resources.Limits[tfjob.GPUResource] = resource.MustParse("2")
		}
		return c
	}
	checkBuildJob(t, []buildCase{{
		name: "one worker by default",
		p:    Values{Name: "mnist", Namespace: "default", Image: "tf:2.16", Command: python},
		want: tfJob("mnist", "default", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeWorker: replica(1, tf)}),
	}, {
		name: "every replica type from the counts, GPUs but on the parameter servers",
		p: Values{
			Name: "dist", Namespace: "default", Image: "tf:2.16", Command: python,
			PS: ptr.To[int32](2), Workers: ptr.To[int32](3), Chief: ptr.To(true), Evaluator: ptr.To(true),
			GPUs: ptr.To[int64](2), CPU: &cpu, Memory: &mem,
		},
		want: tfJob("dist", "default", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
			tfv1.ReplicaTypeChief:     replica(1, withResources(tf, true)),
			tfv1.ReplicaTypePS:        replica(2, withResources(tf, false)),
			tfv1.ReplicaTypeWorker:    replica(3, withResources(tf, true)),
			tfv1.ReplicaTypeEvaluator: replica(1, withResources(tf, true)),
		}),
	}, {
		name: "a chief and no workers",
		p:    Values{Name: "single", Namespace: "default", Image: "tf:2.16", Command: python, Workers: ptr.To[int32](0), Chief: ptr.To(true)},
		want: tfJob("single", "default", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeChief: replica(1, tf)}),
	}, {
		name: "code, data, artifacts relative to the code path, environment, storage secret",
		p: Values{
			Name: "shipped", Namespace: "default", Image: "tf:2.16", Command: python,
			Env:                  []corev1.EnvVar{{Name: "EPOCHS", Value: "3"}},
			Code:                 &tfv1.Code{Source: "s3://bkt/code/sha256-ab.tar.gz", SHA256: "ab", Path: "/workspace"},
			Data:                 []tfv1.DataSource{{Source: "s3://bkt/datasets/sha256-cd/", Path: "/data"}},
			ArtifactPaths:        []string{"model", "/tmp/logs/", "ckpt/../export"},
			ArtifactsDestination: "s3://bkt/runs",
			SecretName:           "tfk8s-s3-0123456789",
		},
		want: func() *tfv1.TFJob {
			c := tf
			c.Env = []corev1.EnvVar{{Name: "EPOCHS", Value: "3"}}
			j := tfJob("shipped", "default", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeWorker: replica(1, c)})
			j.Spec.Code = &tfv1.Code{Source: "s3://bkt/code/sha256-ab.tar.gz", SHA256: "ab", Path: "/workspace"}
			j.Spec.Data = []tfv1.DataSource{{Source: "s3://bkt/datasets/sha256-cd/", Path: "/data"}}
			j.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://bkt/runs", Paths: []string{"/workspace/model", "/tmp/logs", "/workspace/export"}}
			j.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "tfk8s-s3-0123456789"}}
			return j
		}(),
	}, {
		name: "run policy, restart policy on every replica type, exposed credentials, resume from an earlier job",
		p: Values{
			Name: "v2", Namespace: "team", Image: "tf:2.16", Command: python, PS: ptr.To[int32](1),
			ArtifactPaths: []string{"model"}, ArtifactsDestination: "s3://bkt/runs", SecretName: "v2-storage",
			ExposeCredentials: ptr.To(true), ResumeFrom: "v1", RestartPolicy: ptr.To(tfv1.RestartPolicyExitCode),
			BackoffLimit: ptr.To[int32](2), ActiveDeadlineSeconds: ptr.To[int64](3600), TTLSecondsAfterFinished: ptr.To[int32](60),
			CleanPodPolicy: ptr.To(tfv1.CleanPodPolicyAll),
		},
		want: func() *tfv1.TFJob {
			ps, worker := replica(1, tf), replica(1, tf)
			ps.RestartPolicy, worker.RestartPolicy = tfv1.RestartPolicyExitCode, tfv1.RestartPolicyExitCode
			j := tfJob("v2", "team", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypePS: ps, tfv1.ReplicaTypeWorker: worker})
			j.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://bkt/runs", Paths: []string{"/workspace/model"}, ResumeFrom: "s3://bkt/runs/team/v1/"}
			j.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "v2-storage"}, ExposeCredentials: true}
			j.Spec.RunPolicy = tfv1.RunPolicy{
				BackoffLimit: ptr.To[int32](2), ActiveDeadlineSeconds: ptr.To[int64](3600), TTLSecondsAfterFinished: ptr.To[int32](60),
				CleanPodPolicy: ptr.To(tfv1.CleanPodPolicyAll),
			}
			return j
		}(),
	}})
}

// TestBuildJobOverManifest: flags given beside a manifest (submit -f) override it.
func TestBuildJobOverManifest(t *testing.T) {
	python := []string{"python3", "train.py"}
	base := tfJob("from-file", "team", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
		tfv1.ReplicaTypeWorker: {
			Replicas:      ptr.To[int32](4),
			RestartPolicy: tfv1.RestartPolicyOnFailure,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"gpu": "a100"},
				Containers:   []corev1.Container{{Name: "sidecar", Image: "envoy"}, {Name: "tensorflow", Image: "old", Args: []string{"--old"}}},
			}},
		},
	})
	base.Spec.RunPolicy.BackoffLimit = ptr.To[int32](3)

	checkBuildJob(t, []buildCase{{
		name: "a manifest stands where no flag is given",
		base: base,
		p:    Values{},
		want: base,
	}, {
		name: "flags override a manifest; a new replica type copies the workers' template",
		base: base,
		p: Values{
			Name: "renamed", Namespace: "other", Image: "tf:2.16", Command: python,
			Workers: ptr.To[int32](8), PS: ptr.To[int32](1), Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
		},
		want: func() *tfv1.TFJob {
			j := base.DeepCopy()
			j.Name, j.Namespace = "renamed", "other"
			w := j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker]
			w.Replicas = ptr.To[int32](8)
			w.Template.Spec.Containers[1] = corev1.Container{Name: "tensorflow", Image: "tf:2.16", Command: python, Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}
			ps := w.DeepCopy()
			ps.Replicas = ptr.To[int32](1)
			j.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS] = ps
			return j
		}(),
	}})
}

func TestBuildJobErrors(t *testing.T) {
	python := []string{"python3", "train.py"}
	cases := []struct {
		name string
		base *tfv1.TFJob
		p    Values
		want string
	}{{
		name: "no name",
		p:    Values{Image: "tf", Command: python},
		want: "--name is required: the job has no name",
	}, {
		name: "no image",
		p:    Values{Name: "a", Command: python},
		want: "--image is required: replica type Worker has no image",
	}, {
		name: "no chief and no worker",
		p:    Values{Name: "a", Image: "tf", Workers: ptr.To[int32](0), PS: ptr.To[int32](1)},
		want: "the job has no chief and no worker: set --workers to 1 or more, or add --chief",
	}, {
		name: "a manifest's only chief removed",
		base: tfJob("a", "", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeChief: replica(1, corev1.Container{Image: "tf"})}),
		p:    Values{Chief: ptr.To(false)},
		want: "the job has no chief and no worker: set --workers to 1 or more, or add --chief",
	}, {
		name: "resume without artifacts",
		p:    Values{Name: "a", Image: "tf", Command: python, ArtifactsDestination: "s3://bkt/runs", ResumeFrom: "old"},
		want: "--resume-from old needs --artifacts: the paths to restore, and to back up again",
	}, {
		name: "credentials exposed without storage",
		p:    Values{Name: "a", Image: "tf", Command: python, ExposeCredentials: ptr.To(true)},
		want: "--expose-storage-credentials: the job uses no S3 storage",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.base, tc.p)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Build error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestBuildJobPlacement checks --gpu-type (a node selector on the replicas that ask for
// GPUs, the parameter servers left free to run anywhere) and --spread-ps (a preferred
// anti-affinity among the job's parameter servers, beside a manifest's own affinity).
func TestBuildJobPlacement(t *testing.T) {
	python := []string{"python3", "train.py"}
	own := corev1.WeightedPodAffinityTerm{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone"}}
	base := tfJob("", "", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
		tfv1.ReplicaTypeWorker: replica(1, corev1.Container{Name: "tensorflow"}),
		tfv1.ReplicaTypePS:     replica(2, corev1.Container{Name: "tensorflow"}),
	})
	base.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS].Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{own}}}
	job, err := Build(base, Values{Name: "placed", Image: "tf", Command: python, Workers: ptr.To[int32](2),
		Chief: ptr.To(true), GPUs: ptr.To[int64](1), GPUType: "NVIDIA-A100-SXM4-80GB", SpreadPS: true})
	if err != nil {
		t.Fatal(err)
	}
	type placement struct {
		NodeSelector map[string]string
		Affinity     *corev1.Affinity
	}
	got := map[tfv1.ReplicaType]placement{}
	for rt, spec := range job.Spec.TFReplicaSpecs {
		got[rt] = placement{spec.Template.Spec.NodeSelector, spec.Template.Spec.Affinity}
	}
	gpu := placement{NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}
	spread := corev1.WeightedPodAffinityTerm{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tfk8s.io/job-name": "placed", "tfk8s.io/replica-type": "ps"}},
		TopologyKey:   "kubernetes.io/hostname",
	}}
	want := map[tfv1.ReplicaType]placement{
		tfv1.ReplicaTypeChief:  gpu,
		tfv1.ReplicaTypeWorker: gpu,
		tfv1.ReplicaTypePS: {Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{own, spread}}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("placement by replica type (-want +got):\n%s", diff)
	}

	_, err = Build(nil, Values{Name: "a", Image: "tf", Command: python, GPUType: "T4"})
	if want := "--gpu-type T4: no replica asks for GPUs; add --gpus"; err == nil || err.Error() != want {
		t.Errorf("Build with --gpu-type and no GPUs: error %v, want %q", err, want)
	}
}

// TestBuildJobDeviceClaim: --gpus with --device-class asks for the GPUs by a claim on
// the class for every replica type but the parameter servers, in place of the device
// plugin's count. Over a manifest whose replicas claim devices, --device-selector alone
// replaces their selectors; over one that claims none, it is refused.
func TestBuildJobDeviceClaim(t *testing.T) {
	p := Params{Name: "mnist", Image: "tf:2", PS: ptr.To[int32](1), Workers: ptr.To[int32](4), Chief: ptr.To(true),
		GPUs: ptr.To[int64](1), DeviceClass: "gpu.example.com", DeviceSelectors: []string{`device.driver == "gpu.example.com"`}}
	job, err := New(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	want := &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com", Count: ptr.To[int64](1), Selectors: []string{`device.driver == "gpu.example.com"`}}
	for rt, spec := range job.Spec.TFReplicaSpecs {
		w := want
		if rt == tfv1.ReplicaTypePS {
			w = nil
		}
		if d := cmp.Diff(w, spec.DeviceClaim); d != "" {
			t.Errorf("%s deviceClaim (-want +got):\n%s", rt, d)
		}
		if limits := spec.Template.Spec.Containers[0].Resources.Limits; len(limits) != 0 {
			t.Errorf("%s limits %v, want none: the claim stands for the GPUs", rt, limits)
		}
	}

	selector := `device.attributes["gpu.example.com"].model == "A100"`
	again, err := New(job, Params{DeviceSelectors: []string{selector}})
	if err != nil {
		t.Fatalf("--device-selector over a manifest with a deviceClaim: %v", err)
	}
	want = &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com", Count: ptr.To[int64](1), Selectors: []string{selector}}
	if d := cmp.Diff(want, again.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].DeviceClaim); d != "" {
		t.Errorf("worker deviceClaim over the manifest (-want +got):\n%s", d)
	}

	plain, err := New(nil, Params{Name: "mnist", Image: "tf:2"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(plain, Params{DeviceSelectors: []string{selector}})
	if want := "needs --device-class: the manifest's replicas claim no devices"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("--device-selector over a manifest without a deviceClaim: error %v, want %q", err, want)
	}
}
