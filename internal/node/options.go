package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// Defaults of Options.
const (
	DefaultStateDir       = "/var/lib/tfk8s-node"
	DefaultPodCIDR        = "10.244.0.0/24"
	DefaultBridge         = "tfk8s0"
	DefaultClusterDomain  = "cluster.local"
	DefaultPort           = 10250
	DefaultMaxPods        = 110
	DefaultRestartBackoff = 10 * time.Second
	// MaxRestartBackoff caps the doubling back-off between container restarts, as the
	// kubelet does.
	MaxRestartBackoff = 5 * time.Minute
	// LocalStorageClass is the StorageClass whose claims the node's local provisioner
	// serves (with claims that name no class at all).
	LocalStorageClass = "tfk8s-local"
	// GPUResource is the extended resource the node advertises with Options.GPUs.
	GPUResource = "nvidia.com/gpu"
)

// Options configure a node. Config and NodeName are required; the rest has defaults.
type Options struct {
	// Config reaches the API server.
	Config *rest.Config
	// NodeName is the name of the Node object.
	NodeName string
	// StateDir holds runc state, pod sandboxes, volumes and logs.
	StateDir string
	// PodCIDR is the node's pod network; the bridge takes its first address.
	PodCIDR string
	// Bridge is the name of the Linux bridge pods attach to.
	Bridge string
	// NodeIP is the node's InternalIP, where the kubelet API listens. Default: the
	// bridge's address.
	NodeIP string
	// ClusterDNS are the nameservers of ClusterFirst pods. Empty: such pods get the
	// host's resolv.conf, as the kubelet does without --cluster-dns.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain.
	ClusterDomain string
	// GPUs is how many nvidia.com/gpu the node advertises.
	GPUs int
	// IPForward lets the host forward what the node's pods send to addresses off the
	// bridge: the pods of the other nodes of a local cluster, each on its own bridge
	// of the same host. Only the bridge's own forwarding is turned on, so that it goes
	// with the bridge; the host's other interfaces keep theirs.
	IPForward bool
	// Port is the kubelet API's HTTPS port.
	Port int
	// ClientCAFile, when set, makes the kubelet API require client certificates signed
	// by this CA (what kube-apiserver presents with --kubelet-client-certificate).
	// Unset, the API serves anyone who reaches it.
	ClientCAFile string
	// BinDir leads the default PATH of the containers of HostImages, and is mounted into
	// them: the host is their image, and the tfk8s binaries beside the node
	// (tfk8s-agent above all) are part of it. Default: the directory of the running
	// executable.
	BinDir string
	// HostImages are the image names (matched exactly) whose containers run on the
	// host's filesystem, read-only, with BinDir mounted, as every container did before
	// the node pulled images. The docs name tfk8s.io/host for it. Every other image is
	// pulled; there is no fallback to the host.
	HostImages []string
	// RegistryMirrors map a registry (ghcr.io; docker.io for bare names; * for every
	// registry) to a mirror URL tried first, with the same repository path; http://
	// URLs are plain HTTP. The registry itself is tried when the mirror fails.
	RegistryMirrors map[string]string
	// ImageDir caches image blobs by digest and the unpacked root of each image by its
	// config digest. Several nodes may share one: every write is to a temporary name
	// renamed into place. Default: <StateDir>/images.
	ImageDir string
	// RuncPath is the runc binary. Default: runc on $PATH.
	RuncPath string
	// RestartBackoff is the first delay before restarting a failed container, and
	// before pulling an image again after a failed pull; it doubles up to
	// MaxRestartBackoff, as the kubelet's back-offs do.
	RestartBackoff time.Duration
	// ShutdownGracePeriod, when set, caps each pod's grace period when the node stops.
	// Unset, every pod gets its own terminationGracePeriodSeconds, as when it is
	// deleted: the in-pod agent's final upload needs all of it.
	ShutdownGracePeriod time.Duration
	// LeaseDuration and LeaseRenewInterval are the node Lease's; the node lifecycle
	// controller marks the node NotReady when the lease is not renewed in time.
	LeaseDuration      time.Duration
	LeaseRenewInterval time.Duration
	// StatusInterval is how often the Node's status is refreshed.
	StatusInterval time.Duration
	// AllowedHostPaths are the host directories hostPath volumes (and the volumes of
	// claims, besides the local provisioner's) may name, themselves or below. Empty:
	// none; a pod with a hostPath volume fails with reason HostPathNotAllowed.
	AllowedHostPaths []string
	// MaskedPaths are more host paths hidden from every unprivileged container, besides
	// the host's credentials and the node's state directory: a local cluster's state
	// directory (its kubeconfig and keys).
	MaskedPaths []string
	// LocalProvisioner binds hostPath PersistentVolumes to claims of the tfk8s-local
	// class, or of no class.
	LocalProvisioner bool
	// Log receives the node's messages.
	Log logr.Logger
}

// withDefaults returns opts with every unset field defaulted and checked.
func (opts Options) withDefaults() (Options, error) {
	if opts.Config == nil {
		return opts, errors.New("no API server configuration")
	}
	return opts.withHostDefaults()
}

// withHostDefaults defaults and checks every field but Config: what a cleanup needs.
func (opts Options) withHostDefaults() (Options, error) {
	if opts.NodeName == "" {
		host, err := os.Hostname()
		if err != nil {
			return opts, fmt.Errorf("reading the host name for the node name: %w", err)
		}
		opts.NodeName = host
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	abs, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return opts, fmt.Errorf("resolving the state directory: %w", err)
	}
	opts.StateDir = abs
	if opts.ImageDir == "" {
		opts.ImageDir = filepath.Join(opts.StateDir, "images")
	}
	if opts.ImageDir, err = filepath.Abs(opts.ImageDir); err != nil {
		return opts, fmt.Errorf("resolving --image-dir: %w", err)
	}
	if _, err := parseMirrors(opts.RegistryMirrors); err != nil {
		return opts, err
	}
	if opts.PodCIDR == "" {
		opts.PodCIDR = DefaultPodCIDR
	}
	if opts.Bridge == "" {
		opts.Bridge = DefaultBridge
	}
	if len(opts.Bridge) > 15 {
		return opts, fmt.Errorf("bridge name %q is longer than 15 characters", opts.Bridge)
	}
	if opts.ClusterDomain == "" {
		opts.ClusterDomain = DefaultClusterDomain
	}
	if opts.Port == 0 {
		opts.Port = DefaultPort
	}
	if opts.RuncPath == "" {
		opts.RuncPath = "runc"
	}
	if opts.BinDir == "" {
		if exe, err := os.Executable(); err == nil {
			opts.BinDir = filepath.Dir(exe)
		}
	}
	if opts.RestartBackoff == 0 {
		opts.RestartBackoff = DefaultRestartBackoff
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = 40 * time.Second
	}
	if opts.LeaseRenewInterval == 0 {
		opts.LeaseRenewInterval = 10 * time.Second
	}
	if opts.StatusInterval == 0 {
		opts.StatusInterval = time.Minute
	}
	for flag, paths := range map[string][]string{"--allowed-host-paths": opts.AllowedHostPaths, "--masked-paths": opts.MaskedPaths} {
		for i, p := range paths {
			if !filepath.IsAbs(p) {
				return opts, fmt.Errorf("%s: %q is not an absolute path", flag, p)
			}
			paths[i] = filepath.Clean(p)
		}
	}
	if opts.GPUs < 0 {
		return opts, fmt.Errorf("--gpus %d is negative", opts.GPUs)
	}
	if _, err := parsePodCIDR(opts.PodCIDR); err != nil {
		return opts, err
	}
	for _, ip := range opts.ClusterDNS {
		if net.ParseIP(ip) == nil {
			return opts, fmt.Errorf("cluster DNS %q is not an IP address", ip)
		}
	}
	if opts.NodeIP == "" {
		cidr, _ := parsePodCIDR(opts.PodCIDR)
		opts.NodeIP = cidr.gateway().String()
	} else if net.ParseIP(opts.NodeIP) == nil {
		return opts, fmt.Errorf("node IP %q is not an IP address", opts.NodeIP)
	}
	return opts, nil
}
