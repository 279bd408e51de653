package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/proc"
)

func TestStatusOf(t *testing.T) {
	dir := t.TempDir()
	p := pathsIn(dir)
	if err := os.MkdirAll(p.run, 0o700); err != nil {
		t.Fatal(err)
	}
	sleep, err := proc.StartDetached(compDNS, "/bin/sleep", []string{"60"}, nil, p.run)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Stop(0) })

	st, err := StatusOf(Options{Dir: dir, BinDir: "/bin"})
	if err != nil {
		t.Fatal(err)
	}
	var running []string
	for _, c := range st.Components {
		if c.Running() {
			running = append(running, c.Name)
		}
	}
	if diff := cmp.Diff([]string{compDNS}, running); diff != "" {
		t.Errorf("running components (-want +got):\n%s", diff)
	}
	if st.Running() || st.Stopped() {
		t.Errorf("Running() = %v, Stopped() = %v; want a partly running cluster", st.Running(), st.Stopped())
	}
	var out bytes.Buffer
	st.Print(&out)
	for _, want := range []string{"partly running", "coredns", "10.244.0.1:53", "stopped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}

	if err := sleep.Stop(0); err != nil {
		t.Fatal(err)
	}
	if st, err = StatusOf(Options{Dir: dir, BinDir: "/bin"}); err != nil || !st.Stopped() {
		t.Errorf("after stopping: Stopped() = %v, %v; want true", st.Stopped(), err)
	}
	if _, err := os.Stat(filepath.Join(p.run, compDNS+".pid")); !os.IsNotExist(err) {
		t.Errorf("pid file after stopping: %v, want it removed", err)
	}
}

// TestKubeconfig: before up, an error saying to run it with the same --dir; after,
// the kubeconfig's path and content.
func TestKubeconfig(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := Kubeconfig(Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "run tfk8s local up --dir "+dir) {
		t.Errorf("before up: error = %v, want one saying to run up", err)
	}
	want := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(want, []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path, data, err := Kubeconfig(Options{Dir: dir})
	if err != nil || path != want || string(data) != "apiVersion: v1\n" {
		t.Errorf("Kubeconfig = %q, %q, %v; want %q and its content", path, data, err, want)
	}
}

// TestStatusMetricsSkipped: with every component running but metrics-server, status
// says why up skipped it when kube-apiserver lacks the aggregation layer's flags, and
// that up restarts what is missing when it has them.
func TestStatusMetricsSkipped(t *testing.T) {
	dir := t.TempDir()
	p := pathsIn(dir)
	if err := os.MkdirAll(p.run, 0o700); err != nil {
		t.Fatal(err)
	}
	start := func(name, exe string, args ...string) {
		t.Helper()
		sleep, err := proc.StartDetached(name, exe, args, nil, p.run)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sleep.Stop(0) })
	}
	opts := Options{Dir: dir, BinDir: "/bin"}
	st, err := StatusOf(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Components {
		if c.Name != compMetricsServer && c.Name != compAPIServer {
			start(c.Name, "/bin/sleep", "60")
		}
	}
	// Its arguments are what processArgs reads: none of the aggregation layer's.
	start(compAPIServer, "/bin/sleep", "60")
	wantIn(t, opts, "metrics-server skipped: kube-apiserver without the aggregation layer")

	if err := proc.StopDetached(p.run, compAPIServer, 0); err != nil {
		t.Fatal(err)
	}
	flags := controlplane.AggregationPKIIn(p.run).APIServerArgs()
	start(compAPIServer, "/bin/sh", append([]string{"-c", "sleep 60", "sh"}, flags...)...)
	wantIn(t, opts, "partly running (tfk8s local up restarts what is missing)")
}

// wantIn checks that the status of the cluster of opts, printed, contains want.
func wantIn(t *testing.T, opts Options, want string) {
	t.Helper()
	st, err := StatusOf(opts)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	st.Print(&out)
	if !strings.Contains(out.String(), want) {
		t.Errorf("status output lacks %q:\n%s", want, out.String())
	}
}
