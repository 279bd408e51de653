package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/sys/mountinfo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tfk8s/tfk8s/internal/localnode"
	"github.com/tfk8s/tfk8s/internal/proc"
)

// Timeouts of Down.
const (
	// nodeStopMargin is what a node needs, beyond its pods' longest grace period, to
	// stop its kubelet and containerd and remove its cgroups and veth.
	nodeStopMargin = time.Minute
	// nodeStopGraceUnknown is the node's grace when its pods cannot be listed: enough
	// for the agent's (120 s) and the margin.
	nodeStopGraceUnknown = 5 * time.Minute
	// stopGraceDefault is every other component's.
	stopGraceDefault = 15 * time.Second
	// cleanupTimeout bounds `tfk8s-nodeinit cleanup`.
	cleanupTimeout = 2 * time.Minute
)

// defaultStopGrace is how long a component has to stop after SIGTERM, before SIGKILL,
// when its pods are not known.
func defaultStopGrace(name string) time.Duration {
	if name == compNode {
		return nodeStopGraceUnknown
	}
	return stopGraceDefault
}

// nodeStopGrace is how long a node has to stop: its pods' longest grace period
// (each pod gets its own, the in-pod agent's last upload included) and a margin. The
// pods are read from the API server, which still runs.
func nodeStopGrace(ctx context.Context, kubeconfig, nodeName string) time.Duration {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nodeStopGraceUnknown
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nodeStopGraceUnknown
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName})
	if err != nil {
		return nodeStopGraceUnknown
	}
	longest := time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
	for _, p := range pods.Items {
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
			longest = max(longest, time.Duration(*g)*time.Second)
		}
	}
	return longest + nodeStopMargin
}

// Down stops the local cluster: every component in stopOrder (the nodes first, which
// stop each pod within its own grace period while S3, DNS and the API server still
// serve its last uploads and statuses), then removes whatever a node that crashed may
// have left (processes and cgroups, its veth and route), the bridge and the host
// network's table and forwarding flags, and checks that nothing is left. What is left
// is the error. The state directory (etcd's data, certificates, S3 data, logs) stays,
// so that Up starts the same cluster again.
func Down(ctx context.Context, opts Options) error {
	opts, err := stop(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Progress, "local cluster in %s stopped; its state stays there for the next tfk8s local up\n", opts.Dir)
	return nil
}

// stop stops the local cluster as Down describes and returns its state directory.
func stop(ctx context.Context, opts Options) (Options, error) {
	if err := checkHost(); err != nil {
		return opts, err
	}
	opts, err := resolve(opts)
	if err != nil {
		return opts, err
	}
	p := pathsIn(opts.Dir)
	nodes := clusterNodes(opts)
	errs := stopNodes(ctx, opts, p, nodes)
	for _, name := range stopOrder {
		if name != compNode { // stopped above
			errs = append(errs, stopComponent(opts, p, name, defaultStopGrace(name)))
		}
	}
	for _, n := range nodes {
		errs = append(errs, cleanUpNode(ctx, opts, n))
	}
	errs = append(errs, deleteBridge(opts.Bridge), tearDownHostNetwork(ctx, opts, p))
	if left := leftovers(ctx, opts, p); len(left) > 0 {
		errs = append(errs, fmt.Errorf("left behind: %s", strings.Join(left, "; ")))
	}
	if err := errors.Join(errs...); err != nil {
		return opts, fmt.Errorf("stopping the local cluster in %s: %w", opts.Dir, err)
	}
	return opts, nil
}

// stopNodes stops every node at once, each within its pods' longest grace period.
func stopNodes(ctx context.Context, opts Options, p paths, nodes []clusterNode) []error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		grace := defaultStopGrace(compNode)
		if proc.FindDetached(p.run, n.component) != nil {
			grace = nodeStopGrace(ctx, p.kubeconfig, n.name)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = stopComponent(opts, p, n.component, grace)
		}()
	}
	wg.Wait()
	return errs
}

// stopComponent stops a component within grace, or removes its stale pid file.
func stopComponent(opts Options, p paths, name string, grace time.Duration) error {
	running := proc.FindDetached(p.run, name)
	if running == nil { // not running: a stale pid file may remain
		return proc.StopDetached(p.run, name, 0)
	}
	fmt.Fprintf(opts.Progress, "stopping %s (pid %d, up to %v)\n", name, running.Pid(), grace)
	return running.Stop(grace)
}

// leftovers lists what remains of the cluster on the host: processes of its
// components or in its nodes' cgroups, the nodes' veths, the bridge, mounts under the
// state directory, and the host network's table and forwarding flags.
func leftovers(ctx context.Context, opts Options, p paths) []string {
	configs := upstreamNodeConfigs(opts)
	var cgroups []string
	for _, c := range configs {
		cgroups = append(cgroups, strings.TrimPrefix(c.CgroupRoot, "/tfk8s/"))
	}
	left := leftoverProcesses("/proc", p.dir, cgroups, os.Getpid())
	for _, c := range configs {
		if linkExists(localnode.HostVeth(c)) {
			left = append(left, "veth "+localnode.HostVeth(c)+" of node "+c.Name)
		}
	}
	if linkExists(opts.Bridge) {
		left = append(left, "bridge "+opts.Bridge)
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(p.dir))
	if err != nil {
		left = append(left, "unknown mounts: "+err.Error())
	}
	for _, m := range mounts {
		left = append(left, "mount "+m.Mountpoint)
	}
	return append(left, hostNetLeftovers(ctx, opts, p)...)
}

// clusterBinaries are the programs whose processes belong to a cluster when they name
// its state directory in their arguments: every component, runc for the pods, and
// what each node runs, its DRA driver among them.
var clusterBinaries = append(slices.Clone(allComponents), "runc", compNodeInit, "kubelet",
	"kube-proxy", "containerd", "containerd-shim-runc-v2", localnode.DRADriverBinary)

// leftoverProcesses lists, from the proc file system at procDir, the processes of the
// cluster in stateDir (a cluster binary with stateDir in its arguments) and the
// processes of its pods (in their cgroups), except self.
func leftoverProcesses(procDir, stateDir string, pods []string, self int) []string {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return []string{fmt.Sprintf("unknown processes: reading %s: %v", procDir, err)}
	}
	var left []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(procDir, e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 { // gone, or a kernel thread
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		name := filepath.Base(args[0])
		if slices.Contains(clusterBinaries, name) && slices.ContainsFunc(args[1:], func(a string) bool { return strings.Contains(a, stateDir) }) {
			left = append(left, fmt.Sprintf("process %d (%s)", pid, name))
			continue
		}
		cgroup, _ := os.ReadFile(filepath.Join(procDir, e.Name(), "cgroup"))
		for _, uid := range pods {
			if bytes.Contains(cgroup, []byte("/tfk8s/"+uid)) {
				left = append(left, fmt.Sprintf("process %d (%s) of pod %s", pid, name, uid))
				break
			}
		}
	}
	return left
}
