package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// withS3 returns an environment with storage settings and the pairs kv.
func withS3(kv ...string) map[string]string {
	m := map[string]string{
		tfjob.EnvS3Endpoint: "http://127.0.0.1:7070", tfjob.EnvAccessKeyID: "key", tfjob.EnvSecretAccessKey: "secret",
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestParseRunArgs(t *testing.T) {
	defaults := Config{
		CodePath: tfjob.DefaultCodePath, ArtifactsInterval: DefaultArtifactsInterval, FinalUploadTimeout: DefaultFinalUploadTimeout,
		Namespace: DefaultNamespace, ContainerName: tfjob.ContainerName, LogDir: DefaultLogDir, ChildGrace: DefaultChildGrace,
		Unpack: pack.Limits{MaxBytes: pack.DefaultMaxBytes, MaxEntries: pack.DefaultMaxEntries},
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
				tfjob.EnvCodeSource, "s3://bkt/code/sha256-x.tar.gz", tfjob.EnvCodePath, "/src",
				tfjob.EnvData, `[{"source": "s3://bkt/datasets/mnist/", "path": "/data"}]`,
				tfjob.EnvArtifactsDestination, "s3://bkt/runs", tfjob.EnvArtifactsPaths, `["/workspace/model", "/tmp/events"]`,
				tfjob.EnvArtifactsInterval, "30s", tfjob.EnvFinalUploadTimeout, "20s",
				tfjob.EnvNamespace, "team", tfjob.EnvJobName, "mnist", tfjob.EnvReplica, "worker-1", tfjob.EnvContainerName, "trainer",
				tfjob.EnvLogDir, "/logs", tfjob.EnvWorkDir, "/work", tfjob.EnvArtifactsResumeFrom, "s3://bkt/runs/team/mnist-v1/",
				tfjob.EnvExposeStorageCredentials, "true", tfjob.EnvChildGrace, "10s", tfjob.EnvUnpackMaxBytes, "1000", tfjob.EnvUnpackMaxEntries, "20", tfjob.EnvPodName, "mnist-worker-1", tfjob.EnvPodUID, "u-1",
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
				c.Unpack = pack.Limits{MaxBytes: 1000, MaxEntries: 20}
				c.PodName, c.PodUID = "mnist-worker-1", "u-1"
				c.Command = []string{"python3", "train.py"}
			},
		},
		{
			name: "flags win over the environment",
			args: []string{"--code-source", "s3://bkt/flag.tar.gz", "--artifacts-interval", "0", "--s3-endpoint", "s3.local:9000", "--", "run"},
			env:  withS3(tfjob.EnvCodeSource, "s3://bkt/env.tar.gz", tfjob.EnvArtifactsInterval, "5s"),
			want: func(c *Config) {
				c.Storage = storage.Config{Endpoint: "s3.local:9000", AccessKeyID: "key", SecretAccessKey: "secret", Region: storage.DefaultRegion}
				c.CodeSource, c.ArtifactsInterval = "s3://bkt/flag.tar.gz", 0
				c.Command = []string{"run"}
			},
		},
		{
			name: "the total steps set",
			args: []string{"--", "run"},
			env:  map[string]string{tfjob.EnvTotalSteps: "1000000", tfjob.EnvProgressPort: "2230"},
			want: func(c *Config) { c.TotalSteps, c.ProgressPort, c.Command = 1000000, 2230, []string{"run"} },
		},
		{
			name: "bad total steps are unknown, with a warning, and do not fail the job",
			args: []string{"--", "run"},
			env:  map[string]string{tfjob.EnvTotalSteps: "1e6"},
			want: ignoredTotal("1e6"),
		},
		{name: "zero total steps too", args: []string{"--", "run"}, env: map[string]string{tfjob.EnvTotalSteps: "0"}, want: ignoredTotal("0")},
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

// ignoredTotal is the configuration of command run with TFK8S_TOTAL_STEPS set to a bad s.
func ignoredTotal(s string) func(*Config) {
	return func(c *Config) {
		c.Warnings = []string{`ignoring TFK8S_TOTAL_STEPS "` + s + `": want a whole number of steps, at least 1; the total is unknown`}
		c.Command = []string{"run"}
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
		{name: "bad data JSON", args: []string{"--", "x"}, env: withS3(tfjob.EnvData, `{"source": "s3://b/x"}`), wantErr: "parsing TFK8S_DATA"},
		{name: "bad interval", args: []string{"--", "x"}, env: map[string]string{tfjob.EnvArtifactsInterval: "often"}, wantErr: `artifacts interval "often"`},
		{name: "bad code URI", args: []string{"--", "x"}, env: withS3(tfjob.EnvCodeSource, "https://example.com/code.tgz"), wantErr: "code source: parsing S3 URI"},
		{name: "bad digest", args: []string{"--", "x"}, env: withS3(tfjob.EnvCodeSource, "s3://bkt/c.tgz", tfjob.EnvCodeSHA256, "ABC"), wantErr: "64 lower-case hex digits"},
		{name: "relative artifact path", args: []string{"--", "x"}, env: withS3(tfjob.EnvArtifactsDestination, "s3://bkt/r", tfjob.EnvJobName, "j", tfjob.EnvReplica, "ps-0", tfjob.EnvArtifactsPaths, `["model"]`), wantErr: `artifacts path "model": must be absolute`},
		{name: "artifacts without replica", args: []string{"--", "x"}, env: withS3(tfjob.EnvArtifactsDestination, "s3://bkt/r"), wantErr: "needs the job name and replica"},
		{name: "bad child grace", args: []string{"--", "x"}, env: map[string]string{tfjob.EnvChildGrace: "-1s"}, wantErr: "child grace -1s: must not be negative"},
		{name: "bad byte cap", args: []string{"--", "x"}, env: map[string]string{tfjob.EnvUnpackMaxBytes: "4G"}, wantErr: `parsing TFK8S_UNPACK_MAX_BYTES "4G": want a positive whole number`},
		{name: "zero entry cap", args: []string{"--unpack-max-entries", "0", "--", "x"}, wantErr: `parsing TFK8S_UNPACK_MAX_ENTRIES "0"`},
		{name: "bad expose", args: []string{"--", "x"}, env: map[string]string{tfjob.EnvExposeStorageCredentials: "yes please"}, wantErr: tfjob.EnvExposeStorageCredentials},
		{name: "resume from an object", args: []string{"--", "x"}, env: withS3(tfjob.EnvArtifactsDestination, "s3://bkt/r", tfjob.EnvJobName, "j", tfjob.EnvReplica, "ps-0", tfjob.EnvArtifactsResumeFrom, "s3://bkt/r/ns/old"), wantErr: "want a prefix ending in /"},
		{name: "bad progress port", args: []string{"--", "x"}, env: map[string]string{tfjob.EnvProgressPort: "70000"}, wantErr: `parsing TFK8S_PROGRESS_PORT "70000": want a port from 1 to 65535`},
		{name: "storage needed but not configured", args: []string{"--", "x"}, env: map[string]string{tfjob.EnvCodeSource: "s3://bkt/c.tgz"}, wantErr: "no S3 endpoint configured"},
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
