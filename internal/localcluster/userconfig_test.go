package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// annUID owns the user's config file in these tests, when they run as root.
const annUID = 4242

// clusterS3 are the S3 settings of the running cluster in these tests.
var clusterS3 = storage.Config{
	Endpoint: "10.244.0.1:7070", AccessKeyID: "tfk8snew", SecretAccessKey: "new-secret",
	Region: storage.DefaultRegion, Bucket: Bucket, Insecure: true,
}

// TestDecideUserConfig: a config naming the cluster's endpoint follows the cluster's
// keys, keeping a bucket or region of its own; any other is the user's and stays.
func TestDecideUserConfig(t *testing.T) {
	oldKeys := clusterS3
	oldKeys.AccessKeyID, oldKeys.SecretAccessKey = "tfk8sold", "old-secret"
	ownBucket := storage.Config{Endpoint: "http://10.244.0.1:7070/", AccessKeyID: "tfk8sold", SecretAccessKey: "old-secret", Bucket: "mine", Region: "eu-west-1"}
	tests := []struct {
		name        string
		existing    *storage.Config
		wantOutcome UserConfigOutcome
		wantWrite   storage.Config
	}{
		{name: "no file", wantOutcome: UserConfigCreated, wantWrite: clusterS3},
		{name: "the cluster's settings", existing: &clusterS3, wantOutcome: UserConfigCurrent},
		{name: "a deleted cluster's keys at the same endpoint", existing: &oldKeys, wantOutcome: UserConfigUpdated, wantWrite: clusterS3},
		{
			name: "same endpoint as a URL, a bucket and region of its own", existing: &ownBucket, wantOutcome: UserConfigUpdated,
			wantWrite: storage.Config{Endpoint: "10.244.0.1:7070", AccessKeyID: "tfk8snew", SecretAccessKey: "new-secret", Region: "eu-west-1", Bucket: "mine", Insecure: true},
		},
		{name: "a real S3", existing: &storage.Config{Endpoint: "https://s3.example.com", AccessKeyID: "AKIA", SecretAccessKey: "s"}, wantOutcome: UserConfigElsewhere},
		{name: "another local cluster's port", existing: &storage.Config{Endpoint: "10.244.0.1:17070", AccessKeyID: "tfk8sother", SecretAccessKey: "s"}, wantOutcome: UserConfigElsewhere},
		{name: "no endpoint", existing: &storage.Config{Bucket: "mine"}, wantOutcome: UserConfigElsewhere},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outcome, write := decideUserConfig(tc.existing, clusterS3)
			if outcome != tc.wantOutcome {
				t.Errorf("outcome %s, want %s", outcome, tc.wantOutcome)
			}
			if diff := cmp.Diff(tc.wantWrite, write); diff != "" {
				t.Errorf("settings to write (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUpdateUserConfig: what the CLI then reads from the file, and that a file left
// alone keeps its bytes and a rewritten one its mode and link.
func TestUpdateUserConfig(t *testing.T) {
	written, err := encodeS3Config(clusterS3)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		existing     string // "" = no file
		wantOutcome  UserConfigOutcome
		wantEndpoint string
		wantRead     storage.Config // what storage.LoadConfig reads after; zero: the file is unchanged
	}{
		{name: "no file", wantOutcome: UserConfigCreated, wantEndpoint: clusterS3.Endpoint, wantRead: clusterS3},
		{name: "the cluster's own", existing: string(written), wantOutcome: UserConfigCurrent, wantEndpoint: clusterS3.Endpoint},
		{
			name:        "a deleted cluster's keys",
			existing:    "endpoint: 10.244.0.1:7070\naccessKeyID: tfk8sold\nsecretAccessKey: old-secret\nbucket: mine\ninsecure: true\n",
			wantOutcome: UserConfigUpdated, wantEndpoint: clusterS3.Endpoint,
			wantRead: storage.Config{Endpoint: "10.244.0.1:7070", AccessKeyID: "tfk8snew", SecretAccessKey: "new-secret", Region: storage.DefaultRegion, Bucket: "mine", Insecure: true},
		},
		{
			name:        "a real S3 set up by hand",
			existing:    "# ours\nendpoint: https://s3.example.com\naccessKeyID: AKIA\nsecretAccessKey: s\nbucket: team\n",
			wantOutcome: UserConfigElsewhere, wantEndpoint: "https://s3.example.com",
		},
		{name: "not YAML", existing: "endpoint: [\n", wantOutcome: UserConfigElsewhere},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ".tfk8s", "config")
			if tc.existing != "" {
				// Through a link, readable by a group and, as root, another user's:
				// all of it stays.
				target := filepath.Join(dir, "dotfiles", "tfk8s")
				testutil.WriteFile(t, target, tc.existing)
				if err := os.Chmod(target, 0o640); err != nil {
					t.Fatal(err)
				}
				if os.Geteuid() == 0 {
					if err := os.Chown(target, annUID, annUID); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, path); err != nil {
					t.Fatal(err)
				}
				if os.Geteuid() == 0 {
					if err := os.Lchown(path, annUID, annUID); err != nil {
						t.Fatal(err)
					}
				}
			}
			outcome, endpoint, err := updateUserConfig(path, clusterS3)
			if err != nil {
				t.Fatal(err)
			}
			if outcome != tc.wantOutcome || endpoint != tc.wantEndpoint {
				t.Errorf("updateUserConfig = %s, %q; want %s, %q", outcome, endpoint, tc.wantOutcome, tc.wantEndpoint)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantRead == (storage.Config{}) {
				if string(data) != tc.existing {
					t.Errorf("file now %q, want it unchanged: %q", data, tc.existing)
				}
				return
			}
			got, err := storage.LoadConfig(storage.Config{}, func(string) string { return "" }, path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantRead, got); diff != "" {
				t.Errorf("settings the CLI reads (-want +got):\n%s", diff)
			}
			if tc.existing == "" {
				return
			}
			if info, err := os.Lstat(path); err != nil || info.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s is no longer a link: %v", path, err)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != 0o640 {
				t.Errorf("mode after the rewrite %v, want 0640", info.Mode().Perm())
			}
			if st := info.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && (st.Uid != annUID || st.Gid != annUID) {
				t.Errorf("owner after the rewrite %d:%d, want %d:%d, the user's", st.Uid, st.Gid, annUID, annUID)
			}
		})
	}
}

// TestUpdateUserConfigPlanted: root, rewriting a user's config, writes through no
// symlink the user planted, neither at the former temporary name nor as the config
// itself pointing at another user's file.
func TestUpdateUserConfigPlanted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("files of two users need root: run as root")
	}
	const stale = "endpoint: 10.244.0.1:7070\naccessKeyID: tfk8sold\nsecretAccessKey: old-secret\n"
	tests := []struct {
		name    string
		plant   func(t *testing.T, config, victim string)
		wantErr bool
	}{{
		name: "config.tmp linked to root's file",
		plant: func(t *testing.T, config, victim string) {
			testutil.WriteFile(t, config, stale)
			plantLink(t, victim, config+".tmp")
		},
	}, {
		name:    "config linked to root's file",
		plant:   func(t *testing.T, config, victim string) { plantLink(t, victim, config) },
		wantErr: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			config := filepath.Join(t.TempDir(), "config")
			victim := filepath.Join(t.TempDir(), "shadow")
			testutil.WriteFile(t, victim, stale)
			tc.plant(t, config, victim)
			if err := os.Chown(filepath.Dir(config), annUID, annUID); err != nil {
				t.Fatal(err)
			}
			_, _, err := updateUserConfig(config, clusterS3)
			if (err != nil) != tc.wantErr {
				t.Errorf("updateUserConfig: %v, want an error: %v", err, tc.wantErr)
			}
			if got, err := os.ReadFile(victim); err != nil || string(got) != stale {
				t.Errorf("root's file now %q (%v), want it untouched", got, err)
			}
		})
	}
}

// plantLink makes a symlink at link to target, owned by the user.
func plantLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, annUID, annUID); err != nil {
		t.Fatal(err)
	}
}

// TestPrintUserConfig: each outcome says whether tfk8s uses the cluster's S3 server,
// and a file left alone says how to use it instead.
func TestPrintUserConfig(t *testing.T) {
	base := Status{UserConfig: "/home/ann/.tfk8s/config", S3: clusterS3, S3ConfigFile: "/root/.tfk8s/local/s3.yaml"}
	tests := []struct {
		outcome  UserConfigOutcome
		endpoint string
		want     string
	}{
		{UserConfigCreated, clusterS3.Endpoint, "The S3 settings were written to /home/ann/.tfk8s/config: tfk8s uses the cluster's S3 server.\n"},
		{UserConfigUpdated, clusterS3.Endpoint, "/home/ann/.tfk8s/config held an earlier cluster's keys for this S3 endpoint: it now holds this cluster's, so tfk8s uses its S3 server.\n"},
		{UserConfigCurrent, clusterS3.Endpoint, "/home/ann/.tfk8s/config holds the cluster's S3 settings: tfk8s uses its S3 server.\n"},
		{UserConfigElsewhere, "s3.example.com", "/home/ann/.tfk8s/config points at S3 endpoint s3.example.com, not the cluster's 10.244.0.1:7070, and was left as it is; " +
			"to use the cluster's S3 server instead:\n  export TFK8S_CONFIG=/root/.tfk8s/local/s3.yaml\n"},
		{UserConfigElsewhere, "", "/home/ann/.tfk8s/config does not name the cluster's S3 endpoint 10.244.0.1:7070, and was left as it is; " +
			"to use the cluster's S3 server instead:\n  export TFK8S_CONFIG=/root/.tfk8s/local/s3.yaml\n"},
	}
	for _, tc := range tests {
		st := base
		st.UserConfigOutcome, st.UserConfigEndpoint = tc.outcome, tc.endpoint
		var out bytes.Buffer
		st.printUserConfig(&out)
		if diff := cmp.Diff(tc.want, out.String()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.outcome, diff)
		}
		if strings.Contains(out.String(), clusterS3.SecretAccessKey) {
			t.Errorf("%s printed the secret key", tc.outcome)
		}
	}
}
