// Command tfk8s-node is a kubelet for processes: it registers a Node with the API
// server and runs the pods bound to it as runc containers on their images, pulled from
// their registries (or mirrors) and unpacked once; images named by --host-image run on
// the host's own file system instead. It needs root and runc (apt-get install -y runc).
// See package internal/node.
//
//	tfk8s-node --kubeconfig FILE [flags]   run until SIGTERM or SIGINT, then stop every pod
//	tfk8s-node --cleanup [flags]           remove what a crashed node left behind
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tfk8s/tfk8s/internal/node"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run parses flags, then runs the node or cleans up; it returns the exit code.
func run(args []string) int {
	fs := flag.NewFlagSet("tfk8s-node", flag.ContinueOnError)
	var (
		opts       node.Options
		kubeconfig string
		clusterDNS string
		cleanup    bool
	)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig reaching the API server (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&opts.NodeName, "node-name", "", "name of the Node (default: the host name)")
	fs.StringVar(&opts.StateDir, "state-dir", node.DefaultStateDir, "directory of runc state, pod sandboxes, volumes and logs")
	fs.StringVar(&opts.PodCIDR, "pod-cidr", node.DefaultPodCIDR, "IPv4 network of the node's pods; the bridge takes its first address")
	fs.StringVar(&opts.Bridge, "bridge", node.DefaultBridge, "Linux bridge the pods attach to")
	fs.StringVar(&opts.NodeIP, "node-ip", "", "the node's InternalIP, where the kubelet API listens (default: the bridge address)")
	fs.StringVar(&clusterDNS, "cluster-dns", "", "comma-separated nameservers of ClusterFirst pods (default: none, pods use the host's resolv.conf)")
	fs.StringVar(&opts.ClusterDomain, "cluster-domain", node.DefaultClusterDomain, "cluster DNS domain")
	fs.IntVar(&opts.GPUs, "gpus", 0, "nvidia.com/gpu to advertise; pods get distinct indices in NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES")
	fs.BoolVar(&opts.IPForward, "ip-forward", false, "forward what pods send off the bridge (to the pods of the host's other nodes, each on its own bridge); only the bridge's forwarding is turned on")
	fs.IntVar(&opts.Port, "port", node.DefaultPort, "HTTPS port of the kubelet API (container logs)")
	fs.StringVar(&opts.ClientCAFile, "client-ca-file", "", "require kubelet API clients to present a certificate signed by this CA")
	fs.StringVar(&opts.RuncPath, "runc", "runc", "runc binary")
	fs.DurationVar(&opts.RestartBackoff, "restart-backoff", node.DefaultRestartBackoff, "first delay before restarting a failed container; doubles up to 5m")
	fs.DurationVar(&opts.ShutdownGracePeriod, "shutdown-grace-period", 0, "cap on each pod's grace period when the node stops (default: none, each pod gets its terminationGracePeriodSeconds)")
	fs.Func("allowed-host-paths", "comma-separated host directories hostPath volumes may name (default: none; a pod naming another path fails with reason HostPathNotAllowed)", func(s string) error {
		opts.AllowedHostPaths = splitList(s)
		return nil
	})
	fs.Func("masked-paths", "comma-separated host paths to hide from containers, besides the host's credentials and --state-dir", func(s string) error {
		opts.MaskedPaths = splitList(s)
		return nil
	})
	fs.Func("host-image", "image name (exact) whose containers run on the host's file system with the node's bin directory mounted, not pulled; repeatable (the docs use tfk8s.io/host)", func(s string) error {
		opts.HostImages = append(opts.HostImages, s)
		return nil
	})
	fs.Func("registry-mirror", "REGISTRY=URL: pull images of REGISTRY (docker.io for bare names, * for every registry) from the mirror URL first, same repository path, then from the registry; http:// is plain HTTP; repeatable", func(s string) error {
		reg, url, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("%q is not REGISTRY=URL", s)
		}
		if opts.RegistryMirrors == nil {
			opts.RegistryMirrors = map[string]string{}
		}
		opts.RegistryMirrors[reg] = url
		return nil
	})
	fs.StringVar(&opts.ImageDir, "image-dir", "", "cache of image blobs (by digest) and unpacked image roots, shareable by several nodes (default <state-dir>/images)")
	fs.BoolVar(&opts.LocalProvisioner, "local-provisioner", true, "bind hostPath volumes to claims of the tfk8s-local class or of no class")
	fs.BoolVar(&cleanup, "cleanup", false, "remove the containers, mounts, network namespaces, veths and bridge a node left behind, then exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("tfk8s-node")
	opts.Log = log
	opts.ClusterDNS = splitList(clusterDNS)

	if cleanup {
		if err := node.Cleanup(opts); err != nil {
			log.Error(err, "Cleaning up")
			return 1
		}
		return 0
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		log.Error(err, "Reading kubeconfig")
		return 1
	}
	cfg.UserAgent = "tfk8s-node"
	cfg.QPS, cfg.Burst = 100, 200
	opts.Config = cfg

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := node.Run(ctx, opts); err != nil {
		fmt.Fprintf(os.Stderr, "tfk8s-node: %v\n", err)
		return 1
	}
	return 0
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var items []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
