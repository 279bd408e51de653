package main

import (
	"path/filepath"
	"testing"
)

func TestRunFlags(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	cases := []struct {
		name string
		args []string
		want int
	}{
		{name: "unknown flag", args: []string{"--no-such-flag"}, want: 2},
		{name: "cleanup of a node that never ran", args: []string{"--cleanup", "--state-dir", state, "--bridge", "tfk8sflagtest"}, want: 0},
		{name: "invalid pod CIDR", args: []string{"--cleanup", "--state-dir", state, "--pod-cidr", "10.0.0.0/31"}, want: 1},
		{name: "registry mirror without =", args: []string{"--cleanup", "--state-dir", state, "--registry-mirror", "ghcr.io"}, want: 2},
		{name: "registry mirror without a scheme", args: []string{"--cleanup", "--state-dir", state, "--registry-mirror", "*=127.0.0.1:5000"}, want: 1},
		{name: "image flags of a cleanup", args: []string{"--cleanup", "--state-dir", state, "--bridge", "tfk8sflagtest", "--registry-mirror", "*=http://127.0.0.1:5000", "--host-image", "tfk8s.io/host", "--image-dir", filepath.Join(t.TempDir(), "images")}, want: 0},
		{name: "kubeconfig missing", args: []string{"--kubeconfig", filepath.Join(t.TempDir(), "absent"), "--state-dir", state}, want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.args); got != tc.want {
				t.Errorf("run(%q) = %d, want %d", tc.args, got, tc.want)
			}
		})
	}
}
