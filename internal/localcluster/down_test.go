package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLeftoverProcesses(t *testing.T) {
	proc := t.TempDir()
	const state = "/root/.tfk8s/local"
	const pod = "0b7c2a3e-1111-2222-3333-444455556666"
	fake := func(pid, cmdline, cgroup string) {
		dir := filepath.Join(proc, pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte(cmdline), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cgroup), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fake("10", "/work/bin/etcd\x00--data-dir="+state+"/cluster/etcd\x00", "0::/\n")
	fake("11", "/work/bin/etcd\x00--data-dir=/tmp/other/etcd\x00", "0::/\n")                        // another cluster's
	fake("12", "tail\x00-f\x00"+state+"/cluster/etcd.log\x00", "0::/\n")                            // not a cluster binary
	fake("13", "runc\x00--root\x00"+state+"/node/runc\x00run\x00abc\x00", "0::/\n")                 // a pod's runc
	fake("14", "python3\x00trainer.py\x00", "4:memory:/tfk8s/"+pod+"/tensorflow/abc\n")             // a pod's process
	fake("15", "python3\x00other.py\x00", "4:memory:/tfk8s/ffffffff-0000/tensorflow/abc\n")         // another node's pod
	fake("16", "", "")                                                                              // a kernel thread
	fake("17", "/work/bin/tfk8s\x00local\x00down\x00--dir\x00"+state+"\x00", "0::/\n")              // the tfk8s command
	fake("18", "/work/bin/tfk8s-node\x00--state-dir="+state+"/node\x00", "0::/\n")                  // self
	fake("19", "/work/bin/dra-test-driver\x00--kubeconfig="+state+"/node/kubeconfig\x00", "0::/\n") // the node's DRA driver
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}

	got := leftoverProcesses(proc, state, []string{pod}, 18)
	want := []string{"process 10 (etcd)", "process 13 (runc)", "process 14 (python3) of pod " + pod, "process 19 (dra-test-driver)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("leftover processes (-want +got):\n%s", diff)
	}
}

// TestStopOrder: every component is stopped once, each before what it needs: the node
// (whose pods upload to S3, resolve through DNS and report to the API server) first,
// etcd (under the API server) last.
func TestStopOrder(t *testing.T) {
	if diff := cmp.Diff(slices.Sorted(slices.Values(allComponents)), slices.Sorted(slices.Values(stopOrder))); diff != "" {
		t.Fatalf("stopOrder is not every component once (-want +got):\n%s", diff)
	}
	needs := map[string][]string{
		compNode:       {compS3, compDNS, compAPIServer, compEtcd},
		compController: {compAPIServer},
		compAPIServer:  {compEtcd},
	}
	for user, deps := range needs {
		for _, dep := range deps {
			if slices.Index(stopOrder, user) > slices.Index(stopOrder, dep) {
				t.Errorf("%s is stopped after %s, which it needs: %v", user, dep, stopOrder)
			}
		}
	}
}
