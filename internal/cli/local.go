//go:build linux && !sdk

package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/localnode"
)

// newLocalCommand returns `tfk8s local` and its subcommands up, down, delete, status,
// kubeconfig and load. Progress goes to stderr, results to stdout, as for every tfk8s command;
// the S3 settings up writes go to tfk8s's own config file.
func newLocalCommand(o *rootOptions) *cobra.Command {
	opts := &localcluster.Options{UserConfigFile: o.env.ConfigFile}
	streams := o.env.IOStreams
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run a one-machine Kubernetes cluster with tfk8s (needs root and Linux)",
		Long: `tfk8s local runs a real Kubernetes control plane and a node that runs pods as
runc containers on this machine, each on the image it names, pulled through the
cluster's own image registry (which mirrors every registry), with cluster DNS, an S3
server and the tfk8s controller. It all comes from bin/ (make build tools) and keeps
running after the command returns. State, logs and pid files are kept in
~/.tfk8s/local (--dir to change) until local delete removes them.`,
	}
	cmd.PersistentFlags().StringVar(&opts.Dir, "dir", "", "state directory of the cluster (default ~/.tfk8s/local)")
	cmd.AddCommand(newUpCommand(opts, streams), newDownCommand(opts, streams), newLocalDeleteCommand(opts, streams),
		newStatusCommand(opts, streams), newKubeconfigCommand(opts, streams), newLoadCommand(opts, streams))
	return cmd
}

// newUpCommand returns `tfk8s local up`.
func newUpCommand(opts *localcluster.Options, streams genericiooptions.IOStreams) *cobra.Command {
	var exposed []string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local cluster, or what is missing of it",
		Long: `Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the image
registry, the node (the upstream kubelet, containerd and kube-proxy, in a network and
mount namespace of its own, joined to the host bridge), CoreDNS, versitygw (S3, bucket
tfk8s) and tfk8s-controller, each once the one before is ready, and writes the
kubeconfig and the S3 settings. What already runs is kept, so up on a running cluster
only prints its status. The S3 settings are also written to ~/.tfk8s/config
($TFK8S_CONFIG) if that file does not exist or names the cluster's S3 endpoint with
other keys (a deleted cluster's); a file naming another endpoint is left alone.

The registry (10.244.0.1:5000, the bridge's first address and --registry-port) gets
every OCI image layout of the source tree's _out/images (make images, make
tensorflow-image) and of --images, under the reference's repository path:
ghcr.io/tfk8s/tensorflow:2.21.0-cpu is pushed as
10.244.0.1:5000/tfk8s/tensorflow:2.21.0-cpu. Each node's containerd looks for every
image there first, then in its own registry, so pods name images by their usual
references; pods themselves cannot reach the registry. Blobs the registry has are not
sent again: a second up pushes nothing new.

With --install helm or --install kustomize, tfk8s-controller does not run as a host
process: up installs tfk8s into the cluster from the images of _out/images (make
images), as it would be installed on any cluster: bin/helm upgrade --install of
charts/tfk8s, or bin/kustomize build config/default applied server-side (make
install-tools builds both), in namespace tfk8s-system, and waits until the
controller's Deployment is available. The controller then runs as two pods (one
leads) under its ServiceAccount, with the chart's RBAC only. local status shows
them; local down stops them with the node.

With --nodes N, N nodes run, each its own Node with --gpus fake GPUs: the first named
--node-name, node i (from 2) NAME-i. All join the bridge, on --pod-cidr's network: the
host takes its first address, node i the address after it plus i (10.244.0.2, ...);
each node's pods take the next networks of its size (10.244.1.0/24, 10.244.2.0/24,
...), and every node routes to the others' pods. A running cluster keeps its number
of nodes: to change it, local down first (a later up with fewer nodes deletes the
Nodes of the ones gone).

With --dra-gpus G, each node also runs a DRA driver publishing G simulated GPUs, and
DeviceClass ` + localnode.DRADriver + ` selects them: submit --gpus 1 --device-class
` + localnode.DRADriver + ` claims one (docs/gpus.md, "DRA: devices by claim").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Progress = streams.ErrOut
			var err error
			if opts.ExposedToPods, err = localcluster.ParseExposedToPods(exposed); err != nil {
				return err
			}
			st, err := localcluster.Up(cmd.Context(), *opts)
			if err != nil {
				return err
			}
			st.Print(streams.Out)
			st.PrintUsage(streams.Out)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Ports.APIServer, "apiserver-port", 0, "kube-apiserver's port on the bridge's first address (default 6443)")
	f.StringVar(&opts.PodCIDR, "pod-cidr", "", "the nodes' network, on the bridge: the API server, registry, DNS and S3 listen on its first address, each node's pods take the next networks of its size (default "+localcluster.DefaultPodCIDR+")")
	f.StringVar(&opts.Bridge, "bridge", "", "the host's Linux bridge the nodes join (default "+localcluster.DefaultBridge+")")
	f.StringVar(&opts.NodeName, "node-name", "", "name of the node (default "+localcluster.DefaultNodeName+")")
	f.IntVar(&opts.GPUs, "gpus", 0, "number of fake nvidia.com/gpu devices each node advertises (none by default)")
	f.BoolVar(&opts.RealGPUs, "real-gpus", false, "advertise the host's NVIDIA GPUs, found through NVML (bin/tfk8s-nvml), instead of fake ones: each GPU to one node")
	f.IntVar(&opts.DRAGPUs, "dra-gpus", 0, "number of simulated GPUs each node's DRA driver publishes, for claims of DeviceClass "+localnode.DRADriver+" (none by default)")
	f.IntVar(&opts.Nodes, "nodes", 0, "number of nodes, each a kubelet, containerd and kube-proxy in namespaces of its own, with its pod network (default 1); a running cluster keeps its number")
	f.DurationVar(&opts.Timeout, "timeout", 0, "longest wait for each component to become ready (default 2m)")
	f.IntVar(&opts.Ports.Registry, "registry-port", 0, "the image registry's port on the bridge's first address (default 5000)")
	f.StringArrayVar(&opts.Images, "images", nil, "directory of OCI image layouts (or one layout) to push into the registry, besides the source tree's _out/images; repeatable")
	f.StringVar(&opts.Install, "install", "", "install tfk8s into the cluster with "+localcluster.InstallHelm+" or "+localcluster.InstallKustomize+" instead of running the controller on the host")
	f.StringSliceVar(&exposed, "expose-to-pods", nil, "IPv4 CIDRs pods may reach although they are the host's own addresses or link-local (169.254.0.0/16), which are dropped otherwise: a dataset server on the host's LAN address, say; each up sets them anew")
	return cmd
}

// newDownCommand returns `tfk8s local down`.
func newDownCommand(opts *localcluster.Options, streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster and remove its network, mounts and containers",
		Long: `Stops every component of the local cluster (the node first stops its pods),
removes what a crashed node left (containers, mounts, network namespaces, veths, the
bridge), and fails naming anything that is still left. The state directory stays:
up starts the same cluster again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Progress = streams.ErrOut
			return localcluster.Down(cmd.Context(), *opts)
		},
	}
}

// newLocalDeleteCommand returns `tfk8s local delete`.
func newLocalDeleteCommand(opts *localcluster.Options, streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "delete",
		Short: "Stop the local cluster and remove its state directory",
		Long: `Stops the local cluster as local down does, then removes its state directory:
etcd's data, the certificates, the S3 data, the registry's images and the logs. The
next local up makes a new cluster: a new CA, new S3 keys, an empty etcd. The node's
image cache (--image-dir) is shared by every local cluster and stays.

A directory without the cluster.yaml that up writes is refused, as are / and the
home directory; a missing one is nothing to delete. If down fails, the directory stays.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Progress = streams.ErrOut
			d, err := localcluster.Delete(cmd.Context(), *opts)
			if err != nil {
				return err
			}
			d.Print(streams.Out)
			return nil
		},
	}
}

// newStatusCommand returns `tfk8s local status`.
func newStatusCommand(opts *localcluster.Options, streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show which components of the local cluster run",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			st, err := localcluster.StatusOf(*opts)
			if err != nil {
				return err
			}
			st.Print(streams.Out)
			return nil
		},
	}
}

// newKubeconfigCommand returns `tfk8s local kubeconfig`.
func newKubeconfigCommand(opts *localcluster.Options, streams genericiooptions.IOStreams) *cobra.Command {
	var raw bool
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the path of the local cluster's kubeconfig (--raw: its content)",
		Example: `  export KUBECONFIG=$(tfk8s local kubeconfig)
  tfk8s local kubeconfig --raw > ~/.kube/tfk8s-local`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			path, data, err := localcluster.Kubeconfig(*opts)
			if err != nil {
				return err
			}
			if raw {
				_, err = streams.Out.Write(data)
				return err
			}
			fmt.Fprintln(streams.Out, path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "print the kubeconfig itself")
	return cmd
}
