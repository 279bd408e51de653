package controller

import (
	"testing"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
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
		{name: "the artifacts, mirrored", wantDir: tensorBoardDir, s3: "s3://runs/ml/mnist/"},
		{name: "the volume named logs", volumes: []tfv1.JobVolume{data, logs}, wantVolume: "logs", wantDir: "/logs"},
		{name: "a directory in a volume", logDir: "/data/tb", volumes: []tfv1.JobVolume{logs, data}, wantVolume: "data", wantDir: "/data/tb"},
		{name: "an S3 prefix", logDir: "s3://other/tb/", volumes: []tfv1.JobVolume{logs}, wantDir: tensorBoardDir, s3: "s3://other/tb/"},
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
