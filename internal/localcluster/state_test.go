package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tfk8s/tfk8s/internal/storage"
)

func TestMergeSettings(t *testing.T) {
	saved := settings{
		NodeName: "n1", PodCIDR: "10.9.0.0/24", Bridge: "br9", ClusterDomain: "cluster.local",
		GPUs: 2, Nodes: 2, Ports: DefaultPorts,
	}
	savedWith := func(f func(*settings)) settings { s := saved; f(&s); return s }
	tests := []struct {
		name    string
		opts    Options
		running bool
		want    settings
		wantErr string
	}{
		{
			name: "unset settings come from the saved ones",
			want: saved,
		},
		{
			name:    "explicit settings equal to the saved ones are fine while running",
			opts:    Options{Bridge: "br9", Ports: Ports{APIServer: DefaultPorts.APIServer}},
			running: true,
			want:    saved,
		},
		{
			name: "explicit settings win when nothing runs",
			opts: Options{Bridge: "br10", PodCIDR: "10.10.0.0/24", Ports: Ports{S3: 9000}},
			want: savedWith(func(s *settings) { s.Bridge, s.PodCIDR, s.Ports.S3 = "br10", "10.10.0.0/24", 9000 }),
		},
		{
			name:    "other settings while running are refused, each named",
			opts:    Options{Bridge: "br10", GPUs: 1},
			running: true,
			wantErr: "--bridge is br9, not br10\n--gpus is 2, not 1",
		},
		{
			name:    "another install method while running is refused",
			opts:    Options{Install: InstallHelm},
			running: true,
			wantErr: "--install is , not helm",
		},
		{
			name: "the install method is kept",
			opts: Options{Install: InstallKustomize},
			want: savedWith(func(s *settings) { s.Install = InstallKustomize }),
		},
		{
			name: "--real-gpus replaces the saved --gpus when nothing runs",
			opts: Options{RealGPUs: true},
			want: savedWith(func(s *settings) { s.GPUs, s.RealGPUs = 0, true }),
		},
		{
			name:    "--real-gpus while a cluster with --gpus runs is refused",
			opts:    Options{RealGPUs: true},
			running: true,
			wantErr: "--real-gpus is false, not true",
		},
		{
			name:    "another port while running is refused",
			opts:    Options{Ports: Ports{APIServer: 7443}},
			running: true,
			wantErr: "ports",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mergeSettings(tc.opts, saved, tc.running)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), "run tfk8s local down first") {
					t.Errorf("error %q does not say what to do", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, settingsOf(got)); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMergeSettingsRealGPUs checks that a cluster made with --real-gpus keeps them
// on an up without the flag, and that --gpus given later replaces them.
func TestMergeSettingsRealGPUs(t *testing.T) {
	saved := settings{NodeName: "n1", RealGPUs: true, Ports: DefaultPorts}
	tests := []struct {
		name     string
		opts     Options
		running  bool
		wantGPUs int
		wantReal bool
	}{
		{name: "an up without flags keeps the host's GPUs", wantReal: true},
		{name: "an up of a running cluster keeps them", running: true, wantReal: true},
		{name: "--gpus replaces them when nothing runs", opts: Options{GPUs: 3}, wantGPUs: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mergeSettings(tc.opts, saved, tc.running)
			if err != nil {
				t.Fatal(err)
			}
			if got.GPUs != tc.wantGPUs || got.RealGPUs != tc.wantReal {
				t.Errorf("--gpus %d, --real-gpus %v; want %d, %v", got.GPUs, got.RealGPUs, tc.wantGPUs, tc.wantReal)
			}
			if _, err := got.withDefaults(); err != nil {
				t.Errorf("the merged options are refused: %v", err)
			}
		})
	}
}

func TestSettingsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if s, err := loadSettings(path); err != nil || s != nil {
		t.Fatalf("loadSettings of a missing file = %v, %v; want nil, nil", s, err)
	}
	want := settings{NodeName: "n", PodCIDR: "10.1.0.0/24", Bridge: "b", ClusterDomain: "d", GPUs: 1, WithoutNode: true, Ports: DefaultPorts}
	if err := saveSettings(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := loadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(path, []byte("bridge: b\nunknown: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadSettings(path); err == nil {
		t.Error("loadSettings accepted an unknown field")
	}
}

func TestResolveUsesSavedSettings(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	dir := t.TempDir()
	if err := saveSettings(pathsIn(dir).clusterState, settings{Bridge: "saved0", PodCIDR: "10.5.0.0/24", Ports: Ports{APIServer: 16443}}); err != nil {
		t.Fatal(err)
	}
	got, err := resolve(Options{Dir: dir, BinDir: "/bin", NodeName: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	want := settings{NodeName: "mine", PodCIDR: "10.5.0.0/24", Bridge: "saved0", ClusterDomain: DefaultClusterDomain,
		Ports: func() Ports { p := DefaultPorts; p.APIServer = 16443; return p }(),
		Nodes: 1} // saved before --nodes: one
	if diff := cmp.Diff(want, settingsOf(got)); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
}

func TestWriteUserConfigNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name      string
		existing  string // "" = no file
		wantWrote bool
		wantData  string
	}{
		{name: "no file: written", wantWrote: true, wantData: "endpoint: new\n"},
		{name: "the user's file: kept", existing: "endpoint: mine\n", wantData: "endpoint: mine\n"},
		{name: "an empty file: kept", existing: "\n", wantData: "\n"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.Repeat("x", i+1), "config")
			if tc.existing != "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tc.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			wrote, err := writeUserConfig(path, []byte("endpoint: new\n"))
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(path)
			if wrote != tc.wantWrote || string(data) != tc.wantData {
				t.Errorf("wrote %v, file %q; want %v, %q", wrote, data, tc.wantWrote, tc.wantData)
			}
		})
	}
}

func TestS3ConfigKeepsCredentials(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s3.yaml")
	first, err := loadOrCreateS3Config(path, "10.244.0.1:7070")
	if err != nil {
		t.Fatal(err)
	}
	if first.AccessKeyID == "" || len(first.SecretAccessKey) < 32 || first.Bucket != Bucket || !first.Insecure {
		t.Fatalf("new settings %+v: want generated credentials, bucket %s, insecure", first, Bucket)
	}
	data, err := encodeS3Config(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// The file is what the CLI reads as ~/.tfk8s/config.
	fromCLI, err := storage.LoadConfig(storage.Config{}, func(string) string { return "" }, path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, fromCLI); diff != "" {
		t.Errorf("settings read by storage.LoadConfig (-want +got):\n%s", diff)
	}
	second, err := loadOrCreateS3Config(path, "10.77.0.1:9000")
	if err != nil {
		t.Fatal(err)
	}
	want := first
	want.Endpoint = "10.77.0.1:9000"
	if diff := cmp.Diff(want, second); diff != "" {
		t.Errorf("reloaded settings (-want +got):\n%s", diff)
	}
}

func TestWriteKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "secret", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("CA")}}
	if err := writeKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v, want 0600: it holds the admin token", info.Mode().Perm())
	}
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if kc.CurrentContext != ContextName {
		t.Errorf("current context %q, want %q", kc.CurrentContext, ContextName)
	}
	got, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got.Host != cfg.Host || got.BearerToken != cfg.BearerToken || string(got.CAData) != "CA" {
		t.Errorf("client config %s token %q CA %q; want %s, the token and CA", got.Host, got.BearerToken, got.CAData, cfg.Host)
	}
}
