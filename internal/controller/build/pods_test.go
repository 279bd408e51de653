package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/fixtures"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// ownerRef is the controller reference of job "mnist", as this package's tables name it.
var ownerRef = fixtures.OwnerRef

// TestConstructPod checks the whole pod of one replica: stable name and DNS name,
// labels, owner, tracking finalizer, TF_CONFIG, and what the template asked for.
func TestConstructPod(t *testing.T) {
	job := testutil.MakeTFJob("mnist", "ml").UID("uid-1").Chief().Workers(2).Obj()
	tmpl := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template
	tmpl.Labels = map[string]string{"app": "mnist", tfv1.LabelJobName: "spoofed", tfv1.LabelReplicaIndex: "9"}
	tmpl.Annotations = map[string]string{"sidecar.istio.io/inject": "false"}

	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "mnist-worker-1",
			Namespace: "ml",
			Labels: map[string]string{
				"app":                  "mnist",
				tfv1.LabelJobName:      "mnist",
				tfv1.LabelReplicaType:  "worker",
				tfv1.LabelReplicaIndex: "1",
			},
			Annotations:     map[string]string{"sidecar.istio.io/inject": "false"},
			Finalizers:      []string{"tfk8s.io/tracking"},
			OwnerReferences: []metav1.OwnerReference{ownerRef},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:    "tensorflow",
				Image:   "tensorflow/tensorflow:2.16.1",
				Command: []string{"python3", "train.py"},
				Env: []corev1.EnvVar{{Name: "TF_CONFIG", Value: `{"cluster":{"chief":["mnist-chief-0.mnist.ml.svc:2222"],` +
					`"worker":["mnist-worker-0.mnist.ml.svc:2222","mnist-worker-1.mnist.ml.svc:2222"]},` +
					`"task":{"type":"worker","index":1},"environment":"cloud"}`}},
			}},
			RestartPolicy: corev1.RestartPolicyNever,
			Hostname:      "mnist-worker-1",
			Subdomain:     "mnist",
		},
	}
	got := buildPod(t, job, tfv1.ReplicaTypeWorker, 1, PodOptions{})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}
}

// buildPod is Pod for a replica that must build.
func buildPod(t *testing.T, job *tfv1.TFJob, rt tfv1.ReplicaType, index int32, opts PodOptions) *corev1.Pod {
	t.Helper()
	pod, err := Pod(job, rt, index, opts, nil)
	if err != nil {
		t.Fatalf("Pod(%s, %d): %v", rt, index, err)
	}
	return pod
}

// envByContainer maps every container and init container of pod to its environment.
func envByContainer(pod *corev1.Pod) map[string][]corev1.EnvVar {
	out := map[string][]corev1.EnvVar{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		out[c.Name] = c.Env
	}
	return out
}

// TestConstructPodTFConfigContainer checks which container gets TF_CONFIG: the one
// named tensorflow, else the first, and no other.
func TestConstructPodTFConfigContainer(t *testing.T) {
	const tfConfig = `{"cluster":{"worker":["j-worker-0.j.ml.svc:2222","j-worker-1.j.ml.svc:2222"]},` +
		`"task":{"type":"worker","index":0},"environment":"cloud"}`
	withContainers := func(replicas int32, init []corev1.Container, cs ...corev1.Container) *tfv1.TFJob {
		job := testutil.MakeTFJob("j", "ml").Workers(replicas).Obj()
		spec := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec
		spec.InitContainers = init
		spec.Containers = cs
		return job
	}
	cases := []struct {
		name string
		job  *tfv1.TFJob
		want map[string][]corev1.EnvVar
	}{
		{
			name: "the tensorflow container, though not first",
			job: withContainers(2, []corev1.Container{{Name: "setup"}},
				corev1.Container{Name: "sidecar", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}},
				corev1.Container{Name: "tensorflow"}),
			want: map[string][]corev1.EnvVar{
				"setup":      nil,
				"sidecar":    {{Name: "A", Value: "1"}},
				"tensorflow": {{Name: "TF_CONFIG", Value: tfConfig}},
			},
		},
		{
			name: "the first container when none is named tensorflow",
			job:  withContainers(2, nil, corev1.Container{Name: "main"}, corev1.Container{Name: "logger"}),
			want: map[string][]corev1.EnvVar{
				"main":   {{Name: "TF_CONFIG", Value: tfConfig}},
				"logger": nil,
			},
		},
		{
			name: "a TF_CONFIG in the template is replaced, other variables kept in place",
			job: withContainers(2, nil, corev1.Container{Name: "tensorflow", Env: []corev1.EnvVar{
				{Name: "A", Value: "1"}, {Name: "TF_CONFIG", Value: `{"stale":true}`}, {Name: "B", Value: "2"},
			}}),
			want: map[string][]corev1.EnvVar{
				"tensorflow": {{Name: "A", Value: "1"}, {Name: "TF_CONFIG", Value: tfConfig}, {Name: "B", Value: "2"}},
			},
		},
		{
			name: "a single-replica job gets no TF_CONFIG",
			job:  withContainers(1, nil, corev1.Container{Name: "tensorflow", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}),
			want: map[string][]corev1.EnvVar{"tensorflow": {{Name: "A", Value: "1"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := buildPod(t, tc.job, tfv1.ReplicaTypeWorker, 0, PodOptions{})
			if diff := cmp.Diff(tc.want, envByContainer(pod)); diff != "" {
				t.Errorf("environment by container (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConstructPodRestartPolicy checks that the kubelet restarts containers under
// Always and OnFailure only: under ExitCode tfk8s re-creates the pod itself.
func TestConstructPodRestartPolicy(t *testing.T) {
	cases := []struct {
		name   string
		policy tfv1.RestartPolicy
		want   corev1.RestartPolicy
	}{
		{name: "ExitCode", policy: tfv1.RestartPolicyExitCode, want: corev1.RestartPolicyNever},
		{name: "OnFailure", policy: tfv1.RestartPolicyOnFailure, want: corev1.RestartPolicyOnFailure},
		{name: "Always", policy: tfv1.RestartPolicyAlways, want: corev1.RestartPolicyAlways},
		{name: "Never", policy: tfv1.RestartPolicyNever, want: corev1.RestartPolicyNever},
		{name: "unset is Never", policy: "", want: corev1.RestartPolicyNever},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("j", "ml").Workers(2).RestartPolicy(tfv1.ReplicaTypeWorker, tc.policy).Obj()
			job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			pod := buildPod(t, job, tfv1.ReplicaTypeWorker, 0, PodOptions{})
			if diff := cmp.Diff(tc.want, pod.Spec.RestartPolicy); diff != "" {
				t.Errorf("restartPolicy (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConstructPodHostNetwork checks that a HostNetwork replica listens on its
// allocated port, declared as a host port, and that TF_CONFIG points at those ports.
func TestConstructPodHostNetwork(t *testing.T) {
	ports := map[ReplicaKey]int32{{tfv1.ReplicaTypePS, 0}: 20001, {tfv1.ReplicaTypeWorker, 0}: 20002}
	type hostNetworking struct {
		HostNetwork bool
		DNSPolicy   corev1.DNSPolicy
		Ports       []corev1.ContainerPort
		TFConfig    string
	}
	const tfConfig = `{"cluster":{"ps":["h-ps-0.h.ml.svc:20001"],"worker":["h-worker-0.h.ml.svc:20002"]},` +
		`"task":{"type":"worker","index":0},"environment":"cloud"}`
	cases := []struct {
		name string
		job  *tfv1.TFJob
		want hostNetworking
	}{
		{
			name: "tfjob-port replaced in place, other ports kept",
			job: func() *tfv1.TFJob {
				job := testutil.MakeTFJob("h", "ml").PS(1).Workers(1).HostNetwork().Obj()
				c := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0]
				c.Ports = []corev1.ContainerPort{{Name: tfjob.PortName, ContainerPort: 2222}, {Name: "metrics", ContainerPort: 9090}}
				return job
			}(),
			want: hostNetworking{
				HostNetwork: true,
				DNSPolicy:   corev1.DNSClusterFirstWithHostNet,
				Ports: []corev1.ContainerPort{
					{Name: tfjob.PortName, ContainerPort: 20002, HostPort: 20002, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: 9090},
				},
				TFConfig: tfConfig,
			},
		},
		{
			name: "tfjob-port added when the template has none",
			job:  testutil.MakeTFJob("h", "ml").PS(1).Workers(1).HostNetwork().Obj(),
			want: hostNetworking{
				HostNetwork: true,
				DNSPolicy:   corev1.DNSClusterFirstWithHostNet,
				Ports:       []corev1.ContainerPort{{Name: tfjob.PortName, ContainerPort: 20002, HostPort: 20002, Protocol: corev1.ProtocolTCP}},
				TFConfig:    tfConfig,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := buildPod(t, tc.job, tfv1.ReplicaTypeWorker, 0, PodOptions{AddressOptions: AddressOptions{HostPorts: ports}})
			c := pod.Spec.Containers[0]
			got := hostNetworking{HostNetwork: pod.Spec.HostNetwork, DNSPolicy: pod.Spec.DNSPolicy, Ports: c.Ports}
			for _, e := range c.Env {
				if e.Name == tfjob.EnvTFConfig {
					got.TFConfig = e.Value
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("host networking (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConstructPodPriorityClass checks that the scheduling policy's priority class
// applies unless the template names its own.
func TestConstructPodPriorityClass(t *testing.T) {
	cases := []struct {
		name     string
		policy   *tfv1.SchedulingPolicy
		template string
		want     string
	}{
		{name: "none", want: ""},
		{name: "from the scheduling policy", policy: &tfv1.SchedulingPolicy{PriorityClass: "high"}, want: "high"},
		{name: "the template's wins", policy: &tfv1.SchedulingPolicy{PriorityClass: "high"}, template: "low", want: "low"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("j", "ml").Workers(2).Obj()
			job.Spec.RunPolicy.SchedulingPolicy = tc.policy
			job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.PriorityClassName = tc.template
			pod := buildPod(t, job, tfv1.ReplicaTypeWorker, 0, PodOptions{})
			if diff := cmp.Diff(tc.want, pod.Spec.PriorityClassName); diff != "" {
				t.Errorf("priorityClassName (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConstructPodErrors(t *testing.T) {
	cases := []struct {
		name string
		job  *tfv1.TFJob
		opts PodOptions
	}{
		{
			name: "replica type without containers",
			job: func() *tfv1.TFJob {
				job := testutil.MakeTFJob("j", "ml").Workers(2).Obj()
				job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers = nil
				return job
			}(),
		},
		{
			name: "HostNetwork replica without an allocated port",
			job:  testutil.MakeTFJob("j", "ml").Workers(2).HostNetwork().Obj(),
			opts: PodOptions{AddressOptions: AddressOptions{HostPorts: map[ReplicaKey]int32{{tfv1.ReplicaTypeWorker, 1}: 20000}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if pod, err := Pod(tc.job, tfv1.ReplicaTypeWorker, 0, tc.opts, nil); err == nil {
				t.Errorf("ConstructPod returned pod %s and no error", pod.Name)
			}
		})
	}
}

// TestConstructPodDoesNotMutateJob checks that building every pod of a job, agent and
// host networking included, leaves the job (the informer cache's copy) untouched.
func TestConstructPodDoesNotMutateJob(t *testing.T) {
	job := testutil.MakeTFJob("j", "ml").UID("uid-1").Chief().PS(2).Workers(2).Evaluator().Port(2222).HostNetwork().
		Code("s3://bucket/code/sha256-abc.tar.gz").Artifacts("s3://bucket/runs/", "/workspace/model").Obj()
	job.Spec.Data = []tfv1.DataSource{{Source: "s3://bucket/mnist/", Path: "/data"}}
	for _, spec := range job.Spec.TFReplicaSpecs {
		spec.Template.Labels = map[string]string{"app": "j"}
		spec.Template.Annotations = map[string]string{"a": "b"}
		spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TF_CONFIG", Value: "user"}}
		spec.Template.Spec.Containers[0].Args = []string{"--epochs=3"}
	}
	before := job.DeepCopy()
	ports, err := AllocateHostPorts(job, DefaultHostPortRange)
	if err != nil {
		t.Fatalf("AllocateHostPorts: %v", err)
	}
	for _, rt := range tfv1.ReplicaTypes {
		for i := range tfjob.Replicas(job.Spec.TFReplicaSpecs[rt]) {
			pod := buildPod(t, job, rt, i, PodOptions{AddressOptions: AddressOptions{HostPorts: ports}})
			// Writing to the pod must not write through to the job either.
			pod.Labels["x"] = "y"
			pod.Annotations["x"] = "y"
			pod.Spec.Containers[0].Env[0].Value = "changed"
		}
	}
	if diff := cmp.Diff(before, job); diff != "" {
		t.Errorf("job changed by ConstructPod (-before +after):\n%s", diff)
	}
}

// TestConstructPodOfKubeflowJob: the pod of a kubeflow.org job is owned by that job and
// carries Kubeflow's labels beside tfk8s's; worker 0 is the master without a chief.
func TestConstructPodOfKubeflowJob(t *testing.T) {
	pod, err := Pod(fixtures.KubeflowModel(), tfv1.ReplicaTypeWorker, 0, PodOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantOwner := metav1.OwnerReference{APIVersion: "kubeflow.org/v1", Kind: "TFJob", Name: "mnist", UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	if diff := cmp.Diff([]metav1.OwnerReference{wantOwner}, pod.OwnerReferences); diff != "" {
		t.Errorf("owner (-want +got):\n%s", diff)
	}
	want := map[string]string{
		"tfk8s.io/job-name": "mnist", "tfk8s.io/replica-type": "worker", "tfk8s.io/replica-index": "0",
		"training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/replica-type": "worker",
		"training.kubeflow.org/replica-index": "0", "training.kubeflow.org/operator-name": "tfjob-controller",
		"training.kubeflow.org/job-role": "master",
	}
	if diff := cmp.Diff(want, pod.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}
