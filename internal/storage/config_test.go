package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func TestLoadConfig(t *testing.T) {
	const file = `
endpoint: https://files.example.com:9000
bucket: file-bucket
accessKeyID: file-key
secretAccessKey: file-secret
region: eu-west-1
insecure: true
`
	tests := []struct {
		name     string
		explicit Config
		env      map[string]string
		file     string
		want     Config
		wantErr  string
	}{
		{
			name: "file only",
			file: file,
			// The https:// scheme wins over insecure: true.
			want: Config{Endpoint: "files.example.com:9000", Bucket: "file-bucket", AccessKeyID: "file-key", SecretAccessKey: "file-secret", Region: "eu-west-1"},
		},
		{
			name: "environment over file",
			env: map[string]string{
				tfjob.EnvS3Endpoint: "env.example.com:9000", tfjob.EnvS3Bucket: "env-bucket", tfjob.EnvAccessKeyID: "env-key",
				tfjob.EnvSecretAccessKey: "env-secret", tfjob.EnvRegion: "us-west-2", tfjob.EnvS3Insecure: "true",
			},
			file: file,
			want: Config{Endpoint: "env.example.com:9000", Bucket: "env-bucket", AccessKeyID: "env-key", SecretAccessKey: "env-secret", Region: "us-west-2", Insecure: true},
		},
		{
			name:     "explicit over environment",
			explicit: Config{Endpoint: "http://127.0.0.1:7070", Bucket: "flag-bucket"},
			env:      map[string]string{tfjob.EnvS3Endpoint: "env.example.com:9000", tfjob.EnvS3Bucket: "env-bucket", tfjob.EnvS3Insecure: "false"},
			want:     Config{Endpoint: "127.0.0.1:7070", Bucket: "flag-bucket", Region: DefaultRegion, Insecure: true},
		},
		{
			name: "environment insecure false beats file true",
			env:  map[string]string{tfjob.EnvS3Endpoint: "env.example.com", tfjob.EnvS3Insecure: "false"},
			file: "insecure: true\n",
			want: Config{Endpoint: "env.example.com", Region: DefaultRegion},
		},
		{
			name: "bare endpoint, insecure from file",
			file: "endpoint: minio:9000\ninsecure: true\n",
			want: Config{Endpoint: "minio:9000", Region: DefaultRegion, Insecure: true},
		},
		{name: "empty file", file: "\n", wantErr: "no S3 endpoint configured"},
		{name: "nothing at all", wantErr: "no S3 endpoint configured"},
		{name: "bad insecure", env: map[string]string{tfjob.EnvS3Endpoint: "h:1", tfjob.EnvS3Insecure: "yes please"}, wantErr: `TFK8S_S3_INSECURE="yes please"`},
		{name: "bad scheme", explicit: Config{Endpoint: "ftp://h:1"}, wantErr: `"ftp://h:1": scheme must be http or https`},
		{name: "endpoint with path", explicit: Config{Endpoint: "http://h:1/bucket"}, wantErr: `"h:1/bucket": want host:port`},
		{name: "half credentials", explicit: Config{Endpoint: "h:1", AccessKeyID: "k"}, wantErr: "credentials incomplete"},
		{name: "unknown field in file", file: "endpoint: h:1\nsecretKey: x\n", wantErr: "field secretKey not found"},
		{
			name: "prefix from the environment over file, given its slash",
			env:  map[string]string{tfjob.EnvS3Endpoint: "h:1", tfjob.EnvS3Prefix: "notebooks/team/nb"},
			file: "prefix: elsewhere/\n",
			want: Config{Endpoint: "h:1", Region: DefaultRegion, Prefix: "notebooks/team/nb/"},
		},
		{name: "prefix from file", file: "endpoint: h:1\nprefix: team/\n", want: Config{Endpoint: "h:1", Region: DefaultRegion, Prefix: "team/"}},
		{name: "prefix with leading slash", explicit: Config{Endpoint: "h:1", Prefix: "/team"}, wantErr: `S3 prefix "/team" (TFK8S_S3_PREFIX`},
		{name: "prefix with dot dot", env: map[string]string{tfjob.EnvS3Endpoint: "h:1", tfjob.EnvS3Prefix: "team/../other/"}, wantErr: `S3 prefix "team/../other"`},
		{name: "prefix with empty part", explicit: Config{Endpoint: "h:1", Prefix: "team//nb/"}, wantErr: `S3 prefix "team//nb"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = filepath.Join(t.TempDir(), "config")
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			getenv := func(k string) string { return tc.env[k] }
			got, err := LoadConfig(tc.explicit, getenv, path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LoadConfig error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LoadConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	getenv := func(k string) string { return map[string]string{tfjob.EnvS3Endpoint: "h:1"}[k] }
	if _, err := LoadConfig(Config{}, getenv, filepath.Join(t.TempDir(), "absent")); err != nil {
		t.Fatalf("a missing config file must not be an error: %v", err)
	}
}
