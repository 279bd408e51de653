package build

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/fixtures"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func secretEnv(name, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "s3-credentials"}, Key: key, Optional: ptr.To(optional),
	}}}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
}

// TestInjectAgent checks the pod of a job with code, data and artifacts: the agent is
// installed by an init container into a shared volume, runs the user's command, reads
// its settings from the environment and the S3 credentials from the Secret, and has
// time for its last upload.
func TestInjectAgent(t *testing.T) {
	job := fixtures.AgentJob()
	wantSpec := corev1.PodSpec{
		InitContainers: []corev1.Container{{
			Name:            "tfk8s-agent-install",
			Image:           "registry.local/tfk8s-agent:dev",
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{"tfk8s-agent", "install", "/tfk8s/bin"},
			VolumeMounts:    []corev1.VolumeMount{{Name: "tfk8s-agent", MountPath: "/tfk8s"}},
		}},
		Containers: []corev1.Container{{
			Name:    "tensorflow",
			Image:   "tensorflow/tensorflow:2.16.1",
			Command: []string{"/tfk8s/bin/tfk8s-agent", "run", "--", "python3", "train.py", "--epochs=3"},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "tfk8s-agent", MountPath: "/tfk8s/bin", SubPath: "bin", ReadOnly: true},
				{Name: "tfk8s-agent", MountPath: "/tfk8s/logs", SubPath: "logs"},
				{Name: "tfk8s-fetch-0", MountPath: "/workspace"},
				{Name: "tfk8s-fetch-1", MountPath: "/data"},
			},
			Env: []corev1.EnvVar{
				{Name: "TF_CONFIG", Value: `{"cluster":{"worker":["mnist-worker-0.mnist.ml.svc:2222","mnist-worker-1.mnist.ml.svc:2222"]},` +
					`"task":{"type":"worker","index":1},"environment":"cloud"}`},
				secretEnv("TFK8S_S3_ENDPOINT", "endpoint", false),
				secretEnv("AWS_ACCESS_KEY_ID", "accessKeyID", false),
				secretEnv("AWS_SECRET_ACCESS_KEY", "secretAccessKey", false),
				secretEnv("AWS_REGION", "region", true),
				secretEnv("TFK8S_S3_INSECURE", "insecure", true),
				{Name: "TFK8S_CODE_SOURCE", Value: "s3://bucket/code/sha256-abc.tar.gz"},
				{Name: "TFK8S_CODE_SHA256", Value: ""},
				{Name: "TFK8S_CODE_PATH", Value: "/workspace"},
				{Name: "TFK8S_DATA", Value: `[{"source":"s3://bucket/mnist/","path":"/data"}]`},
				{Name: "TFK8S_ARTIFACTS_DESTINATION", Value: "s3://bucket/runs/"},
				{Name: "TFK8S_ARTIFACTS_PATHS", Value: `["/workspace/model"]`},
				{Name: "TFK8S_ARTIFACTS_INTERVAL", Value: "1m0s"},
				{Name: "TFK8S_NAMESPACE", Value: "ml"},
				{Name: "TFK8S_JOB_NAME", Value: "mnist"},
				{Name: "TFK8S_REPLICA", Value: "worker-1"},
				{Name: "TFK8S_CONTAINER_NAME", Value: "tensorflow"},
				{Name: "TFK8S_LOG_DIR", Value: "/tfk8s/logs"},
				fieldEnv("TFK8S_POD_NAME", "metadata.name"),
				fieldEnv("TFK8S_POD_UID", "metadata.uid"),
			},
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
		Volumes: []corev1.Volume{
			{Name: "tfk8s-agent", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("2Gi"))}}},
			{Name: "tfk8s-fetch-0", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("20Gi"))}}},
			{Name: "tfk8s-fetch-1", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("20Gi"))}}},
		},
		TerminationGracePeriodSeconds: ptr.To[int64](120),
		RestartPolicy:                 corev1.RestartPolicyNever,
		Hostname:                      "mnist-worker-1",
		Subdomain:                     "mnist",
	}
	pod := buildPod(t, job, tfv1.ReplicaTypeWorker, 1, PodOptions{Agent: AgentOptions{Image: "registry.local/tfk8s-agent:dev"}})
	if diff := cmp.Diff(wantSpec, pod.Spec); diff != "" {
		t.Errorf("pod spec (-want +got):\n%s", diff)
	}
}

// agentView is what a user checks of an agent pod's TensorFlow container and spec.
type agentView struct {
	InitContainers []string
	Command        []string
	Args           []string
	Mounts         map[string]string // mount path to volume name
	Env            map[string]string // name to literal value
	GracePeriod    *int64
}

func viewAgent(pod *corev1.Pod) agentView {
	c := tfjob.TensorFlowContainer(pod.Spec.Containers)
	v := agentView{Command: c.Command, Args: c.Args, Mounts: map[string]string{}, Env: map[string]string{},
		GracePeriod: pod.Spec.TerminationGracePeriodSeconds}
	for _, ic := range pod.Spec.InitContainers {
		v.InitContainers = append(v.InitContainers, ic.Name+"="+ic.Image)
	}
	for _, m := range c.VolumeMounts {
		v.Mounts[m.MountPath] = m.Name
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "TFK8S_") && e.ValueFrom == nil {
			v.Env[e.Name] = e.Value
		}
	}
	return v
}

// TestInjectAgentVariants checks how the agent fits around what the template already
// says: its command, init containers, mounts, working directory and grace period.
func TestInjectAgentVariants(t *testing.T) {
	baseEnv := func(extra map[string]string) map[string]string {
		env := map[string]string{
			"TFK8S_CODE_SOURCE":           "s3://bucket/code/sha256-abc.tar.gz",
			"TFK8S_CODE_SHA256":           "",
			"TFK8S_CODE_PATH":             "/workspace",
			"TFK8S_DATA":                  `[{"source":"s3://bucket/mnist/","path":"/data"}]`,
			"TFK8S_ARTIFACTS_DESTINATION": "s3://bucket/runs/",
			"TFK8S_ARTIFACTS_PATHS":       `["/workspace/model"]`,
			"TFK8S_ARTIFACTS_INTERVAL":    "1m0s",
			"TFK8S_NAMESPACE":             "ml",
			"TFK8S_JOB_NAME":              "mnist",
			"TFK8S_REPLICA":               "worker-0",
			"TFK8S_CONTAINER_NAME":        "tensorflow",
			"TFK8S_LOG_DIR":               "/tfk8s/logs",
			// worker 0 leads a job of workers alone: it serves its progress.
			"TFK8S_PROGRESS_PORT": "2230",
		}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	defaultMounts := map[string]string{"/tfk8s/bin": "tfk8s-agent", "/tfk8s/logs": "tfk8s-agent", "/workspace": "tfk8s-fetch-0", "/data": "tfk8s-fetch-1"}
	install := "tfk8s-agent-install=" + DefaultAgentImage
	cases := []struct {
		name   string
		modify func(job *tfv1.TFJob, spec *corev1.PodSpec)
		want   agentView
	}{
		{
			name:   "defaults",
			modify: func(*tfv1.TFJob, *corev1.PodSpec) {},
			want: agentView{InitContainers: []string{install},
				Command: []string{"/tfk8s/bin/tfk8s-agent", "run", "--", "python3", "train.py", "--epochs=3"},
				Mounts:  defaultMounts, Env: baseEnv(nil), GracePeriod: ptr.To[int64](120)},
		},
		{
			name: "a grace period set in the template is kept",
			modify: func(_ *tfv1.TFJob, spec *corev1.PodSpec) {
				spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
			},
			want: agentView{InitContainers: []string{install},
				Command: []string{"/tfk8s/bin/tfk8s-agent", "run", "--", "python3", "train.py", "--epochs=3"},
				Mounts:  defaultMounts, Env: baseEnv(nil), GracePeriod: ptr.To[int64](30)},
		},
		{
			name: "the user's volume at the code path is used, not replaced",
			modify: func(job *tfv1.TFJob, spec *corev1.PodSpec) {
				job.Spec.Code.Path = "/src"
				spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "src", MountPath: "/src/"}}
			},
			want: agentView{InitContainers: []string{install},
				Command: []string{"/tfk8s/bin/tfk8s-agent", "run", "--", "python3", "train.py", "--epochs=3"},
				Mounts:  map[string]string{"/src/": "src", "/tfk8s/bin": "tfk8s-agent", "/tfk8s/logs": "tfk8s-agent", "/data": "tfk8s-fetch-1"},
				Env:     baseEnv(map[string]string{"TFK8S_CODE_PATH": "/src"}), GracePeriod: ptr.To[int64](120)},
		},
		{
			name: "the agent's install runs before the user's init containers",
			modify: func(_ *tfv1.TFJob, spec *corev1.PodSpec) {
				spec.InitContainers = []corev1.Container{{Name: "wait-for-db", Image: "busybox"}}
			},
			want: agentView{InitContainers: []string{install, "wait-for-db=busybox"},
				Command: []string{"/tfk8s/bin/tfk8s-agent", "run", "--", "python3", "train.py", "--epochs=3"},
				Mounts:  defaultMounts, Env: baseEnv(nil), GracePeriod: ptr.To[int64](120)},
		},
		{
			name: "args alone are run after the agent's separator",
			modify: func(_ *tfv1.TFJob, spec *corev1.PodSpec) {
				spec.Containers[0].Command = nil
				spec.Containers[0].Args = []string{"python3", "-m", "trainer"}
			},
			want: agentView{InitContainers: []string{install},
				Command: []string{"/tfk8s/bin/tfk8s-agent", "run", "--", "python3", "-m", "trainer"},
				Mounts:  defaultMounts, Env: baseEnv(nil), GracePeriod: ptr.To[int64](120)},
		},
		{
			name: "the container's working directory is passed on",
			modify: func(_ *tfv1.TFJob, spec *corev1.PodSpec) {
				spec.Containers[0].WorkingDir = "/workspace/src"
			},
			want: agentView{InitContainers: []string{install},
				Command: []string{"/tfk8s/bin/tfk8s-agent", "run", "--", "python3", "train.py", "--epochs=3"},
				Mounts:  defaultMounts, Env: baseEnv(map[string]string{"TFK8S_WORKDIR": "/workspace/src"}),
				GracePeriod: ptr.To[int64](120)},
		},
		{
			name: "exposed credentials and a job to resume from are passed on",
			modify: func(job *tfv1.TFJob, _ *corev1.PodSpec) {
				job.Spec.Storage.ExposeCredentials = true
				job.Spec.Artifacts.ResumeFrom = "s3://bucket/runs/ml/mnist-1/"
			},
			want: agentView{InitContainers: []string{install},
				Command: []string{"/tfk8s/bin/tfk8s-agent", "run", "--", "python3", "train.py", "--epochs=3"},
				Mounts:  defaultMounts, GracePeriod: ptr.To[int64](120),
				Env: baseEnv(map[string]string{"TFK8S_EXPOSE_STORAGE_CREDENTIALS": "true",
					"TFK8S_ARTIFACTS_RESUME_FROM": "s3://bucket/runs/ml/mnist-1/"})},
		},
		{
			name: "a user variable of the agent's is overridden, not duplicated",
			modify: func(_ *tfv1.TFJob, spec *corev1.PodSpec) {
				spec.Containers[0].Env = []corev1.EnvVar{{Name: "TFK8S_JOB_NAME", Value: "spoofed"}}
			},
			want: agentView{InitContainers: []string{install},
				Command: []string{"/tfk8s/bin/tfk8s-agent", "run", "--", "python3", "train.py", "--epochs=3"},
				Mounts:  defaultMounts, Env: baseEnv(nil), GracePeriod: ptr.To[int64](120)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := fixtures.AgentJob()
			tc.modify(job, &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec)
			pod := buildPod(t, job, tfv1.ReplicaTypeWorker, 0, PodOptions{})
			if diff := cmp.Diff(tc.want, viewAgent(pod)); diff != "" {
				t.Errorf("agent (-want +got):\n%s", diff)
			}
			if n := countEnv(pod.Spec.Containers[0].Env, "TFK8S_JOB_NAME"); n != 1 {
				t.Errorf("TFK8S_JOB_NAME set %d times, want once", n)
			}
		})
	}
}

func countEnv(env []corev1.EnvVar, name string) int {
	n := 0
	for _, e := range env {
		if e.Name == name {
			n++
		}
	}
	return n
}

// TestAgentCredentialsFromSecret checks that no S3 setting is ever a literal value in
// the pod: each comes from the Secret the job names.
func TestAgentCredentialsFromSecret(t *testing.T) {
	job := fixtures.AgentJob()
	job.Spec.Storage.SecretRef.Name = "team-s3"
	pod := buildPod(t, job, tfv1.ReplicaTypeWorker, 0, PodOptions{})
	got := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		if !strings.HasPrefix(e.Name, "AWS_") && !strings.HasPrefix(e.Name, "TFK8S_S3_") {
			continue
		}
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s is not read from a Secret: %+v", e.Name, e)
			continue
		}
		got[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
	}
	want := map[string]string{
		"TFK8S_S3_ENDPOINT":     "team-s3/endpoint",
		"AWS_ACCESS_KEY_ID":     "team-s3/accessKeyID",
		"AWS_SECRET_ACCESS_KEY": "team-s3/secretAccessKey",
		"AWS_REGION":            "team-s3/region",
		"TFK8S_S3_INSECURE":     "team-s3/insecure",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("S3 settings from the Secret (-want +got):\n%s", diff)
	}
}

// TestNoAgentWithoutStorage checks that a job with neither code, data nor artifacts runs
// its command as written.
func TestNoAgentWithoutStorage(t *testing.T) {
	job := testutil.MakeTFJob("plain", "ml").Workers(2).Obj()
	pod := buildPod(t, job, tfv1.ReplicaTypeWorker, 0, PodOptions{})
	got := agentView{Command: pod.Spec.Containers[0].Command, GracePeriod: pod.Spec.TerminationGracePeriodSeconds}
	for _, ic := range pod.Spec.InitContainers {
		got.InitContainers = append(got.InitContainers, ic.Name)
	}
	want := agentView{Command: []string{"python3", "train.py"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod without agent (-want +got):\n%s", diff)
	}
}

// TestInjectAgentByImageVolume: where the nodes mount images, the pod has no init
// container; the agent's image is a volume whose binary directory the TensorFlow
// container mounts read-only where the init container would have copied it, and the
// agent's emptyDir keeps its logs.
func TestInjectAgentByImageVolume(t *testing.T) {
	pod := buildPod(t, fixtures.AgentJob(), tfv1.ReplicaTypeWorker, 1, PodOptions{Agent: AgentOptions{Image: "registry.local/tfk8s-agent:dev", ImageVolume: true}})
	if len(pod.Spec.InitContainers) != 0 {
		t.Errorf("init containers %v, want none", pod.Spec.InitContainers)
	}
	var image *corev1.Volume
	for i, v := range pod.Spec.Volumes {
		if v.Name == agentImageVolume {
			image = &pod.Spec.Volumes[i]
		}
	}
	wantVolume := &corev1.Volume{Name: "tfk8s-agent-image", VolumeSource: corev1.VolumeSource{
		Image: &corev1.ImageVolumeSource{Reference: "registry.local/tfk8s-agent:dev", PullPolicy: corev1.PullIfNotPresent}}}
	if diff := cmp.Diff(wantVolume, image); diff != "" {
		t.Errorf("the agent's image volume (-want +got):\n%s", diff)
	}
	c := pod.Spec.Containers[0]
	wantMounts := []corev1.VolumeMount{
		{Name: "tfk8s-agent-image", MountPath: "/tfk8s/bin", SubPath: "usr/local/bin", ReadOnly: true},
		{Name: "tfk8s-agent", MountPath: "/tfk8s/logs", SubPath: "logs"},
		{Name: "tfk8s-fetch-0", MountPath: "/workspace"},
		{Name: "tfk8s-fetch-1", MountPath: "/data"},
	}
	if diff := cmp.Diff(wantMounts, c.VolumeMounts); diff != "" {
		t.Errorf("TensorFlow container's mounts (-want +got):\n%s", diff)
	}
	if want := []string{"/tfk8s/bin/tfk8s-agent", "run", "--", "python3", "train.py", "--epochs=3"}; !cmp.Equal(want, c.Command) {
		t.Errorf("command %q, want %q", c.Command, want)
	}
	if pod.Spec.TerminationGracePeriodSeconds == nil || *pod.Spec.TerminationGracePeriodSeconds != 120 {
		t.Errorf("grace period %v, want 120", ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 0))
	}
}
