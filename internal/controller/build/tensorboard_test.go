package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tensorboard"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestJobArtifactsPrefixIsTheStorageLayout: the TensorBoard's mirror reads where the
// agents write. The controller writes the prefix itself rather than link the S3 client
// for one path join, so this test holds the two together.
func TestJobArtifactsPrefixIsTheStorageLayout(t *testing.T) {
	for _, dest := range []string{"s3://runs", "s3://runs/", "s3://tfk8s/runs", "s3://tfk8s/team/runs/"} {
		job := testutil.MakeTFJob("mnist", "ml").Workers(1).Artifacts(dest, "/logs").Obj()
		job.UID = "0f3a9c2e-1b4d-4e5f-8a6b-7c8d9e0f1a2b"
		u, err := storage.ParseURI(dest)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := jobArtifactsPrefix(job), storage.RunPrefix(u, "ml", "mnist", "0f3a9c2e").String(); got != want {
			t.Errorf("destination %s: the TensorBoard mirrors %s, the agents write under %s", dest, got, want)
		}
	}
	if got := jobArtifactsPrefix(&tfv1.TFJob{}); got != "" {
		t.Errorf("a job without artifacts: %q, want none", got)
	}
}

// TestTensorBoardSource: what a job's TensorBoard reads, as spec.tensorboard.logDir
// documents it.
func TestTensorBoardSource(t *testing.T) {
	logs := tfv1.JobVolume{Name: "logs", MountPath: "/logs"}
	data := tfv1.JobVolume{Name: "data", MountPath: "/data/"}
	for _, tc := range []struct {
		name                    string
		logDir                  string
		volumes                 []tfv1.JobVolume
		wantVolume, wantDir, s3 string
	}{
		{name: "the artifacts, mirrored", wantDir: tensorboard.Dir, s3: "s3://runs/ml/mnist/"},
		{name: "the volume named logs", volumes: []tfv1.JobVolume{data, logs}, wantVolume: "logs", wantDir: "/logs"},
		{name: "a directory in a volume", logDir: "/data/tb", volumes: []tfv1.JobVolume{logs, data}, wantVolume: "data", wantDir: "/data/tb"},
		{name: "an S3 prefix", logDir: "s3://other/tb/", volumes: []tfv1.JobVolume{logs}, wantDir: tensorboard.Dir, s3: "s3://other/tb/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("mnist", "ml").Workers(1).Artifacts("s3://runs", "/logs").Obj()
			job.Spec.Volumes = tc.volumes
			job.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true, LogDir: tc.logDir}
			src := sourceOf(job)
			gotVolume := ""
			if src.volume != nil {
				gotVolume = src.volume.Name
			}
			if gotVolume != tc.wantVolume || src.logDir != tc.wantDir || src.s3 != tc.s3 {
				t.Errorf("source: volume %q, dir %q, S3 %q; want %q, %q, %q", gotVolume, src.logDir, src.s3, tc.wantVolume, tc.wantDir, tc.s3)
			}
		})
	}
}

// TestTensorBoardDeployment checks the whole Deployment of a job's TensorBoard for both sources:
// the agent mirroring the run's summaries from S3 into an emptyDir TensorBoard reads,
// or TensorBoard alone reading the job's "logs" volume; each owned by the job, one
// replica, recreated rather than rolled.
func TestTensorBoardDeployment(t *testing.T) {
	mirrored := testutil.MakeTFJob("mnist", "ml").UID("uid-1").Workers(1).Artifacts("s3://runs/", "/logs").Obj()
	onVolume := testutil.MakeTFJob("mnist", "ml").UID("uid-1").Workers(1).Obj()
	onVolume.Spec.Volumes = []tfv1.JobVolume{{Name: "logs", MountPath: "/logs"}}
	onVolume.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true, Image: "registry.local/tensorboard:2"}
	mirrored.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true}
	tensorBoard := func(logDir, image string, mount corev1.VolumeMount) corev1.Container {
		return corev1.Container{
			Name:  "tensorboard",
			Image: image,
			Command: []string{"tensorboard", "--logdir", logDir, "--bind_all", "--port", "6006",
				"--reload_interval", "5", "--reload_multifile", "true"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 6006, Protocol: corev1.ProtocolTCP}},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
				PeriodSeconds: 2,
			},
			VolumeMounts: []corev1.VolumeMount{mount},
		}
	}
	mirror := corev1.Container{
		Name:            "mirror",
		Image:           "registry.local/tfk8s-agent:dev",
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"tfk8s-agent", "mirror", "--from", "s3://runs/ml/mnist/uid1/", "--to", "/tensorboard",
			"--interval", "5s", "--include", "*tfevents*"},
		Env:          tfjob.StorageEnv(corev1.LocalObjectReference{Name: "s3-credentials"}),
		VolumeMounts: []corev1.VolumeMount{{Name: "summaries", MountPath: "/tensorboard"}},
	}
	deployment := func(spec corev1.PodSpec) *appsv1.Deployment {
		spec.AutomountServiceAccountToken = ptr.To(false)
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{
				Name: "mnist-tensorboard", Namespace: "ml", OwnerReferences: []metav1.OwnerReference{ownerRef},
				Labels: map[string]string{tfv1.LabelJobName: "mnist", tfv1.LabelTensorBoard: "mnist"},
			},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{tfv1.LabelTensorBoard: "mnist"}},
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{tfv1.LabelTensorBoard: "mnist"}},
					Spec:       spec,
				},
			},
		}
	}
	opts := PodOptions{Agent: AgentOptions{Image: "registry.local/tfk8s-agent:dev"}}
	for _, tc := range []struct {
		name string
		job  *tfv1.TFJob
		want *appsv1.Deployment
	}{{
		name: "mirrored from S3",
		job:  mirrored,
		want: deployment(corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "summaries", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("4Gi"))}}}},
			Containers: []corev1.Container{mirror, tensorBoard("/tensorboard", DefaultTensorBoardImage,
				corev1.VolumeMount{Name: "summaries", MountPath: "/tensorboard", ReadOnly: true})},
		}),
	}, {
		name: "on the logs volume",
		job:  onVolume,
		want: deployment(corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "tfk8s-volume-logs", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "mnist-logs", ReadOnly: true}}}},
			Containers: []corev1.Container{tensorBoard("/logs", "registry.local/tensorboard:2",
				corev1.VolumeMount{Name: "tfk8s-volume-logs", MountPath: "/logs", ReadOnly: true})},
		}),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, TensorBoard(tc.job, opts)); diff != "" {
				t.Errorf("Deployment (-want +got):\n%s", diff)
			}
		})
	}
}
