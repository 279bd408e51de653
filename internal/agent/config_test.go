package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// withS3 returns an environment with storage settings and the pairs kv.
func withS3(kv ...string) map[string]string {
	m := map[string]string{
		storage.EnvEndpoint: "http://127.0.0.1:7070", storage.EnvAccessKeyID: "key", storage.EnvSecretAccessKey: "secret",
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestParseRunArgs(t *testing.T) {
	defaults := Config{
		CodePath: DefaultCodePath, ArtifactsInterval: DefaultArtifactsInterval, FinalUploadTimeout: DefaultFinalUploadTimeout,
		Namespace: DefaultNamespace, ContainerName: DefaultContainerName, LogDir: DefaultLogDir, ChildGrace: DefaultChildGrace,
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want func(c *Config)
	}{
		{
			name: "command only: no storage needed",
			args: []string{"--", "python3", "train.py"},
			want: func(c *Config) { c.Command = []string{"python3", "train.py"} },
		},
		{
			name: "everything from the environment",
			args: []string{"--", "python3", "train.py"},
			env: withS3(
				EnvCodeSource, "s3://bkt/code/sha256-x.tar.gz", EnvCodePath, "/src",
				EnvData, `[{"source": "s3://bkt/datasets/mnist/", "path": "/data"}]`,
				EnvArtifactsDestination, "s3://bkt/runs", EnvArtifactsPaths, `["/workspace/model", "/tmp/events"]`,
				EnvArtifactsInterval, "30s", EnvFinalUploadTimeout, "20s",
				EnvNamespace, "team", EnvJobName, "mnist", EnvReplica, "worker-1", EnvContainerName, "trainer",
				EnvLogDir, "/logs", EnvWorkDir, "/work", EnvArtifactsResumeFrom, "s3://bkt/runs/team/mnist-v1/",
				EnvExposeStorageCredentials, "true", EnvChildGrace, "10s", EnvPodName, "mnist-worker-1", EnvPodUID, "u-1",
			),
			want: func(c *Config) {
				c.Storage = storage.Config{Endpoint: "127.0.0.1:7070", AccessKeyID: "key", SecretAccessKey: "secret", Region: storage.DefaultRegion, Insecure: true}
				c.CodeSource, c.CodePath = "s3://bkt/code/sha256-x.tar.gz", "/src"
				c.Data = []DataSource{{Source: "s3://bkt/datasets/mnist/", Path: "/data"}}
				c.ArtifactsDestination, c.ArtifactsPaths = "s3://bkt/runs", []string{"/workspace/model", "/tmp/events"}
				c.ArtifactsInterval, c.FinalUploadTimeout = 30*time.Second, 20*time.Second
				c.Namespace, c.JobName, c.Replica, c.ContainerName = "team", "mnist", "worker-1", "trainer"
				c.LogDir, c.WorkDir = "/logs", "/work"
				c.ArtifactsResumeFrom, c.ExposeStorageCredentials, c.ChildGrace = "s3://bkt/runs/team/mnist-v1/", true, 10*time.Second
				c.PodName, c.PodUID = "mnist-worker-1", "u-1"
				c.Command = []string{"python3", "train.py"}
			},
		},
		{
			name: "flags win over the environment",
			args: []string{"--code-source", "s3://bkt/flag.tar.gz", "--artifacts-interval", "0", "--s3-endpoint", "s3.local:9000", "--", "run"},
			env:  withS3(EnvCodeSource, "s3://bkt/env.tar.gz", EnvArtifactsInterval, "5s"),
			want: func(c *Config) {
				c.Storage = storage.Config{Endpoint: "s3.local:9000", AccessKeyID: "key", SecretAccessKey: "secret", Region: storage.DefaultRegion}
				c.CodeSource, c.ArtifactsInterval = "s3://bkt/flag.tar.gz", 0
				c.Command = []string{"run"}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRunArgs(tc.args, func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatalf("ParseRunArgs: %v", err)
			}
			want := defaults
			tc.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ParseRunArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRunArgsErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "no command", args: []string{"--code-path", "/x"}, wantErr: "no command"},
		{name: "bad data JSON", args: []string{"--", "x"}, env: withS3(EnvData, `{"source": "s3://b/x"}`), wantErr: "parsing TFK8S_DATA"},
		{name: "bad interval", args: []string{"--", "x"}, env: map[string]string{EnvArtifactsInterval: "often"}, wantErr: `artifacts interval "often"`},
		{name: "bad code URI", args: []string{"--", "x"}, env: withS3(EnvCodeSource, "https://example.com/code.tgz"), wantErr: "code source: parsing S3 URI"},
		{name: "bad digest", args: []string{"--", "x"}, env: withS3(EnvCodeSource, "s3://bkt/c.tgz", EnvCodeSHA256, "ABC"), wantErr: "64 lower-case hex digits"},
		{name: "relative artifact path", args: []string{"--", "x"}, env: withS3(EnvArtifactsDestination, "s3://bkt/r", EnvJobName, "j", EnvReplica, "ps-0", EnvArtifactsPaths, `["model"]`), wantErr: `artifacts path "model": must be absolute`},
		{name: "artifacts without replica", args: []string{"--", "x"}, env: withS3(EnvArtifactsDestination, "s3://bkt/r"), wantErr: "needs the job name and replica"},
		{name: "bad child grace", args: []string{"--", "x"}, env: map[string]string{EnvChildGrace: "-1s"}, wantErr: "child grace -1s: must not be negative"},
		{name: "bad expose", args: []string{"--", "x"}, env: map[string]string{EnvExposeStorageCredentials: "yes please"}, wantErr: EnvExposeStorageCredentials},
		{name: "resume from an object", args: []string{"--", "x"}, env: withS3(EnvArtifactsDestination, "s3://bkt/r", EnvJobName, "j", EnvReplica, "ps-0", EnvArtifactsResumeFrom, "s3://bkt/r/ns/old"), wantErr: "want a prefix ending in /"},
		{name: "storage needed but not configured", args: []string{"--", "x"}, env: map[string]string{EnvCodeSource: "s3://bkt/c.tgz"}, wantErr: "no S3 endpoint configured"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRunArgs(tc.args, func(k string) string { return tc.env[k] })
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseRunArgs error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
