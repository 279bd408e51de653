package jobspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// inverseSamples are a value for every field, as a user types it, and the other
// flags it needs to say anything: the test fails for a field added to the table
// without one, so that no field goes without its inverse tested.
var inverseSamples = map[string][]string{
	"name":                       {"name=mnist-2"},
	"image":                      {"image=tensorflow/tensorflow:2.21.0"},
	"command":                    nil, // every sample's job has one
	"ps":                         {"ps=2"},
	"workers":                    {"workers=3"},
	"chief":                      {"chief=true"},
	"evaluator":                  {"evaluator=true"},
	"gpus":                       {"gpus=2"},
	"cpu":                        {"cpu=500m"},
	"memory":                     {"memory=4Gi"},
	"restart-policy":             {"restart-policy=OnFailure"},
	"backoff-limit":              {"backoff-limit=2"},
	"active-deadline":            {"active-deadline=2h"},
	"ttl-after-finished":         {"ttl-after-finished=0s"},
	"clean-pod-policy":           {"clean-pod-policy=All"},
	"tensorboard":                {"tensorboard=true"},
	"resume-from":                {"resume-from=mnist/0a1b2c3d", "artifacts=model"},
	"env":                        {"env=EPOCHS=3", "env=LOG=a=b"},
	"volume":                     {"volume=name=logs,mount=/logs,size=1Gi,storageClass=fast,retain", "volume=name=ref,mount=/ref,existing=refdata,readOnly"},
	"gpu-type":                   {"gpu-type=NVIDIA-A100-SXM4-80GB", "gpus=1"},
	"device-class":               {"device-class=gpu.example.com", "gpus=2"},
	"device-selector":            {"device-selector=device.driver == \"gpu.example.com\"", "device-class=gpu.example.com", "gpus=1"},
	"spread-ps":                  {"spread-ps=true", "ps=3"},
	"queue":                      {"queue=team-a"},
	"data":                       {"data=s3://bucket/datasets/mnist/"},
	"artifacts":                  {"artifacts=/workspace/model", "artifacts=/logs"},
	"artifacts-interval":         {"artifacts-interval=30s", "artifacts=model"},
	"expose-storage-credentials": {"expose-storage-credentials=true"},
}

// sampleJob builds the job of flags over a plain job's, with what submit adds of
// its own: a bucket for the artifacts and the storage Secret.
func sampleJob(t *testing.T, flags []string) (Params, *tfv1.TFJob) {
	t.Helper()
	p := Params{Name: "mnist", Namespace: "team-a", Image: "tf:2", Command: []string{"python3", "train.py"}}
	byFlag := map[string]Field{}
	for _, f := range Fields() {
		byFlag[f.Flag] = f
	}
	for _, kv := range flags {
		name, value, _ := strings.Cut(kv, "=")
		if err := byFlag[name].Set(&p, value); err != nil {
			t.Fatalf("--%s: %v", kv, err)
		}
	}
	v, err := p.Check(false)
	if err != nil {
		t.Fatal(err)
	}
	withFrontEnd(&v)
	job, err := Build(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return p, job
}

// withFrontEnd adds what submit makes of its own: the bucket of the artifacts and
// the storage Secret.
func withFrontEnd(v *Values) {
	if len(v.ArtifactPaths) > 0 {
		v.ArtifactsDestination = "s3://bucket/runs/"
	}
	v.SecretName = "s3-credentials"
}

// TestInverseRoundTrip checks, field by field, that the parameters Inverse reads
// from a job build that job again, give the field as it was given, and leave unsaid
// only what a front end adds.
func TestInverseRoundTrip(t *testing.T) {
	for _, f := range Fields() {
		flags, ok := inverseSamples[f.Flag]
		if !ok {
			t.Errorf("field --%s has no sample: add one to inverseSamples", f.Flag)
			continue
		}
		t.Run(f.Flag, func(t *testing.T) {
			p, job := sampleJob(t, flags)
			got, unsaid := Inverse(job)
			if diff := cmp.Diff(f.Text(&p), f.Text(&got)); diff != "" {
				t.Errorf("--%s read back (-want +got):\n%s", f.Flag, diff)
			}
			wantUnsaid := []string{"spec.storage.secretRef"}
			if job.Spec.Artifacts != nil {
				wantUnsaid = []string{"spec.artifacts.destination", "spec.storage.secretRef"}
			}
			if diff := cmp.Diff(wantUnsaid, unsaid); diff != "" {
				t.Errorf("unsaid (-want +got):\n%s", diff)
			}
			got.Namespace = job.Namespace
			v, err := got.Check(false)
			if err != nil {
				t.Fatalf("checking the parameters read back: %v", err)
			}
			withFrontEnd(&v)
			again, err := Build(nil, v)
			if err != nil {
				t.Fatalf("building the parameters read back: %v", err)
			}
			// Both as the API server stores them, its defaults set.
			withServerDefaults(&job.Spec)
			withServerDefaults(&again.Spec)
			if diff := cmp.Diff(job, again); diff != "" {
				t.Errorf("Build(Inverse(job)) (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInverseReportsUnsaid checks that what of a job no field says is named, not
// dropped: a front end shows it rather than losing it.
func TestInverseReportsUnsaid(t *testing.T) {
	tests := []struct {
		name   string
		change func(*tfv1.TFJob)
		want   []string
	}{
		{name: "all said", change: func(*tfv1.TFJob) {}, want: []string{"spec.storage.secretRef"}},
		{name: "a node selector", change: func(j *tfv1.TFJob) {
			j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		}, want: []string{"spec.storage.secretRef", "spec.tfReplicaSpecs.Worker.template.spec.nodeSelector"}},
		{name: "an env from a Secret", change: func(j *tfv1.TFJob) {
			c := &j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "t"}}})
		}, want: []string{"spec.storage.secretRef", "spec.tfReplicaSpecs.Worker.template.spec.containers[0].env"}},
		{name: "parameter servers with their own image", change: func(j *tfv1.TFJob) {
			j.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS].Template.Spec.Containers[0].Image = "tf:ps"
		}, want: []string{"spec.storage.secretRef", "spec.tfReplicaSpecs.PS.template.spec.containers[0].image"}},
		{name: "a master", change: func(j *tfv1.TFJob) {
			j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeMaster] = j.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS].DeepCopy()
		}, want: []string{"spec.storage.secretRef", "spec.tfReplicaSpecs.Master"}},
		{name: "a volume's access modes", change: func(j *tfv1.TFJob) {
			j.Spec.Volumes = []tfv1.JobVolume{{Name: "logs", MountPath: "/logs", Size: ptrQuantity("1Gi"),
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}
		}, want: []string{"spec.storage.secretRef", "spec.volumes[0].accessModes"}},
		{name: "code, bucket and Secret", change: func(j *tfv1.TFJob) {
			j.Spec.Code = &tfv1.Code{Source: "s3://bucket/code/sha256-0.tar.gz"}
			j.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://bucket/runs/", Paths: []string{"/workspace/model"}}
		}, want: []string{"spec.code", "spec.artifacts.destination", "spec.storage.secretRef"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, job := sampleJob(t, []string{"ps=1", "workers=2"})
			tc.change(job)
			_, got := Inverse(job)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unsaid (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// TestCommandLineParsesBack checks that the arguments CommandLine writes, read by
// submit's own flags, give the parameters again.
func TestCommandLineParsesBack(t *testing.T) {
	_, job := sampleJob(t, []string{"workers=2", "ps=1", "chief=true", "env=A=1", "env=B=x y", "artifacts=model",
		"queue=q", "tensorboard=false", "gpus=1", "active-deadline=90s"})
	want, _ := Inverse(job)
	args := CommandLine(want)
	fs := pflag.NewFlagSet("submit", pflag.ContinueOnError)
	var got Params
	AddFlags(fs, &got)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	got.Command = fs.Args()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%q parsed (-want +got):\n%s", args, diff)
	}
}
