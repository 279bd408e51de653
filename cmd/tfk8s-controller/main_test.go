package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// envArgs, set in the environment of this test binary, makes it run the controller's
// main with these flags (space-separated) instead of the tests.
const envArgs = "TFK8S_CONTROLLER_TEST_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(envArgs); ok {
		os.Args = append(os.Args[:1], strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestFlags runs the controller with each flag it checks: a bad value exits 2 with a
// message naming the flag, before the controller looks for its kubeconfig; a good one
// goes on to the kubeconfig, absent here, and exits 1.
func TestFlags(t *testing.T) {
	absent := "--kubeconfig=" + filepath.Join(t.TempDir(), "absent")
	tests := []struct {
		name string
		args string
		code int
		want string
	}{
		{name: "negative TF_CONFIG size", args: "--compact-tf-config-above=-1", code: 2,
			want: `"flag":"--compact-tf-config-above","error":"-1 is negative: a size in bytes, 0 or more"`},
		{name: "every TF_CONFIG composed by the agent", args: "--compact-tf-config-above=0", code: 1, want: "Reading kubeconfig"},
		{name: "host port range backwards", args: "--host-port-range=40000-30000", code: 2, want: `"flag":"--host-port-range"`},
		{name: "fetch limit not a size", args: "--fetch-size-limit=lots", code: 2, want: `"flag":"--fetch-size-limit"`},
		{name: "agent directory limit zero", args: "--agent-dir-size-limit=0", code: 2, want: `"flag":"--agent-dir-size-limit"`},
		{name: "larger fetch limit", args: "--fetch-size-limit=200Gi", code: 1, want: "Reading kubeconfig"},
		{name: "unknown gang scheduler", args: "--gang-scheduler=fifo", code: 2, want: `"flag":"--gang-scheduler"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			// Never a kubeconfig, so that a flag let through ends the run at once.
			cmd.Env = append(os.Environ(), envArgs+"="+tc.args+" "+absent)
			out, err := cmd.CombinedOutput()
			code := 0
			if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.want) {
				t.Errorf("tfk8s-controller %s: exit %d, output\n%s\nwant exit %d and %s", tc.args, code, out, tc.code, tc.want)
			}
		})
	}
}

// TestSetMemoryLimit checks the Go memory limit the controller takes from its
// container's: 70% of it, none without one, GOMEMLIMIT's own when that is set.
func TestSetMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	tests := []struct {
		name    string
		env     map[string]string
		want    int64
		wantErr string
	}{
		{name: "the container's limit", env: map[string]string{"TFK8S_MEMORY_LIMIT": "100000000"}, want: 70000000},
		{name: "no limit", env: map[string]string{}, want: 0},
		{name: "GOMEMLIMIT wins", env: map[string]string{"TFK8S_MEMORY_LIMIT": "100000000", "GOMEMLIMIT": "50MiB"}, want: 0},
		{name: "not bytes", env: map[string]string{"TFK8S_MEMORY_LIMIT": "512Mi"}, wantErr: `TFK8S_MEMORY_LIMIT="512Mi" is not a memory size in bytes`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(before)
			got, err := setMemoryLimit(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("setMemoryLimit = %d, %v; want %d", got, err, tc.want)
			}
			wantRuntime := before
			if tc.want > 0 {
				wantRuntime = tc.want
			}
			if runtimeLimit := debug.SetMemoryLimit(-1); runtimeLimit != wantRuntime {
				t.Errorf("the runtime's memory limit is %d, want %d", runtimeLimit, wantRuntime)
			}
		})
	}
}
