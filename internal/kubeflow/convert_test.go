package kubeflow

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// template is a pod template with the given containers, each running image "tf".
func template(names ...string) corev1.PodTemplateSpec {
	var cs []corev1.Container
	for _, n := range names {
		cs = append(cs, corev1.Container{Name: n, Image: "tf"})
	}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: cs}}
}

// withPort is the template with the port tfjob-port 2222 on container i.
func withPort(t corev1.PodTemplateSpec, i int) corev1.PodTemplateSpec {
	t = *t.DeepCopy()
	t.Spec.Containers[i].Ports = append(t.Spec.Containers[i].Ports, corev1.ContainerPort{Name: "tfjob-port", ContainerPort: 2222})
	return t
}

func kfJob(specs map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec, rp kubeflowv1.RunPolicy) *kubeflowv1.TFJob {
	return &kubeflowv1.TFJob{
		ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: "ml", UID: "uid-1"},
		Spec:       kubeflowv1.TFJobSpec{TFReplicaSpecs: specs, RunPolicy: rp},
	}
}

// TestToModel checks the defaults v1.9 applies in its controller, applied by ToModel.
func TestToModel(t *testing.T) {
	none, running := tfv1.CleanPodPolicyNone, tfv1.CleanPodPolicyRunning
	tests := []struct {
		name      string
		in        *kubeflowv1.TFJob
		wantSpecs map[tfv1.ReplicaType]*tfv1.ReplicaSpec
		wantRun   tfv1.RunPolicy
	}{{
		name: "defaults: one replica, Never, port on the tensorflow container, cleanPodPolicy None",
		in: kfJob(map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			"Worker": {Template: template("sidecar", "tensorflow")},
		}, kubeflowv1.RunPolicy{}),
		wantSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
			"Worker": {Replicas: ptr.To[int32](1), RestartPolicy: "Never", Template: withPort(template("sidecar", "tensorflow"), 1)},
		},
		wantRun: tfv1.RunPolicy{CleanPodPolicy: &none},
	}, {
		name: "types in any case, set values kept, the port already there not added again",
		in: kfJob(map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			"ps":     {Replicas: ptr.To[int32](2), RestartPolicy: "OnFailure", Template: withPort(template("tensorflow"), 0)},
			"WORKER": {Replicas: ptr.To[int32](0), RestartPolicy: "ExitCode", Template: template("main")},
		}, kubeflowv1.RunPolicy{
			CleanPodPolicy: ptr.To(kubeflowv1.CleanPodPolicy("Running")), BackoffLimit: ptr.To[int32](3),
			ActiveDeadlineSeconds: ptr.To[int64](60), TTLSecondsAfterFinished: ptr.To[int32](5),
			Suspend: ptr.To(true), ManagedBy: ptr.To(kubeflowv1.ManagedByTrainingOperator),
			SchedulingPolicy: &kubeflowv1.SchedulingPolicy{MinAvailable: ptr.To[int32](2), Queue: "q", PriorityClass: "high",
				ScheduleTimeoutSeconds: ptr.To[int32](30), MinResources: &map[corev1.ResourceName]resource.Quantity{"cpu": resource.MustParse("2")}},
		}),
		wantSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
			"PS":     {Replicas: ptr.To[int32](2), RestartPolicy: "OnFailure", Template: withPort(template("tensorflow"), 0)},
			"Worker": {Replicas: ptr.To[int32](0), RestartPolicy: "ExitCode", Template: withPort(template("main"), 0)},
		},
		wantRun: tfv1.RunPolicy{
			CleanPodPolicy: &running, BackoffLimit: ptr.To[int32](3), ActiveDeadlineSeconds: ptr.To[int64](60),
			TTLSecondsAfterFinished: ptr.To[int32](5), Suspend: ptr.To(true), ManagedBy: ptr.To(kubeflowv1.ManagedByTrainingOperator),
			SchedulingPolicy: &tfv1.SchedulingPolicy{MinAvailable: ptr.To[int32](2), Queue: "q", PriorityClass: "high",
				ScheduleTimeoutSeconds: ptr.To[int32](30), MinResources: corev1.ResourceList{"cpu": resource.MustParse("2")}},
		},
	}, {
		name: "a canonical key wins over another spelling of the same type",
		in: kfJob(map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			"worker": {Replicas: ptr.To[int32](5), Template: template("tensorflow")},
			"Worker": {Replicas: ptr.To[int32](2), Template: template("tensorflow")},
		}, kubeflowv1.RunPolicy{}),
		wantSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
			"Worker": {Replicas: ptr.To[int32](2), RestartPolicy: "Never", Template: withPort(template("tensorflow"), 0)},
		},
		wantRun: tfv1.RunPolicy{CleanPodPolicy: &none},
	}, {
		name: "two other spellings: the first in sorted order",
		in: kfJob(map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			"worker": {Replicas: ptr.To[int32](5), Template: template("tensorflow")},
			"WORKER": {Replicas: ptr.To[int32](3), Template: template("tensorflow")},
		}, kubeflowv1.RunPolicy{}),
		wantSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
			"Worker": {Replicas: ptr.To[int32](3), RestartPolicy: "Never", Template: withPort(template("tensorflow"), 0)},
		},
		wantRun: tfv1.RunPolicy{CleanPodPolicy: &none},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ToModel(tc.in)
			if diff := cmp.Diff(tc.wantSpecs, got.Spec.TFReplicaSpecs); diff != "" {
				t.Errorf("tfReplicaSpecs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRun, got.Spec.RunPolicy); diff != "" {
				t.Errorf("runPolicy (-want +got):\n%s", diff)
			}
			want := tfv1.TFJobSpec{SuccessPolicy: ptr.To(tfv1.SuccessPolicyDefault), StartupPolicy: tfv1.StartupPolicyParallel,
				Networking: tfv1.Networking{Mode: tfv1.NetworkingModeDNS}}
			got.Spec.TFReplicaSpecs, got.Spec.RunPolicy = nil, tfv1.RunPolicy{}
			if diff := cmp.Diff(want, got.Spec); diff != "" {
				t.Errorf("rest of the spec (-want +got):\n%s", diff)
			}
			if !IsKubeflow(got) || got.UID != "uid-1" {
				t.Errorf("the model does not say it is kubeflow.org job uid-1: %v %s", got.TypeMeta, got.UID)
			}
		})
	}
}

// TestFromModelInvertsToModel: a Kubeflow job with v1.9's defaults written out comes
// back unchanged through the model.
func TestFromModelInvertsToModel(t *testing.T) {
	in := kfJob(map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
		"Chief":  {Replicas: ptr.To[int32](1), RestartPolicy: "Never", Template: withPort(template("tensorflow"), 0)},
		"Worker": {Replicas: ptr.To[int32](3), RestartPolicy: "OnFailure", Template: withPort(template("tensorflow"), 0)},
	}, kubeflowv1.RunPolicy{CleanPodPolicy: ptr.To(kubeflowv1.CleanPodPolicy("None")), Suspend: ptr.To(false),
		SchedulingPolicy: &kubeflowv1.SchedulingPolicy{MinResources: &map[corev1.ResourceName]resource.Quantity{"memory": resource.MustParse("1Gi")}}})
	in.Spec.SuccessPolicy = ptr.To(kubeflowv1.SuccessPolicy("AllWorkers"))
	in.Spec.EnableDynamicWorker = true
	in.SetGroupVersionKind(GVK)
	if diff := cmp.Diff(in, FromModel(ToModel(in))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// FuzzRoundTrip: whatever a Kubeflow job says, its model survives the way to Kubeflow's
// shape and back.
func FuzzRoundTrip(f *testing.F) {
	f.Add(int32(1), int32(2), uint8(0), uint8(0), true, int32(3), int64(60), uint8(5))
	f.Add(int32(-1), int32(0), uint8(3), uint8(2), false, int32(0), int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, chief, workers int32, restart, clean uint8, suspend bool, backoff int32, deadline int64, casing uint8) {
		restarts := []kubeflowv1.RestartPolicy{"", "Always", "OnFailure", "Never", "ExitCode"}
		cleans := []kubeflowv1.CleanPodPolicy{"", "All", "Running", "None"}
		workerKey, chiefKey := kubeflowv1.ReplicaType("Worker"), kubeflowv1.ReplicaType("Chief")
		if casing&1 != 0 {
			workerKey = "worker"
		}
		if casing&2 != 0 {
			chiefKey = "MASTER"
		}
		in := kfJob(map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			chiefKey:  {Replicas: ptr.To(chief), RestartPolicy: restarts[int(restart)%len(restarts)], Template: template("tensorflow")},
			workerKey: {Replicas: ptr.To(workers), Template: template("x", "tensorflow")},
		}, kubeflowv1.RunPolicy{CleanPodPolicy: ptr.To(cleans[int(clean)%len(cleans)]), Suspend: ptr.To(suspend),
			BackoffLimit: ptr.To(backoff), ActiveDeadlineSeconds: ptr.To(deadline)})
		if casing&4 != 0 {
			in.Spec.RunPolicy = kubeflowv1.RunPolicy{}
		}
		model := ToModel(in)
		if diff := cmp.Diff(model, ToModel(FromModel(model))); diff != "" {
			t.Errorf("(-model +round trip):\n%s", diff)
		}
	})
}
