package localcluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/localnode"
	"github.com/tfk8s/tfk8s/internal/proc"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// A cluster on the upstream node (Options.UpstreamNode) lays out its networks so:
// PodCIDR's network is the nodes' own, on the host bridge (Options.Bridge): the host
// takes its first address, where the API server, the registry, DNS and S3 listen, and
// node i the address after the host's plus i. Each node's pods take the network of
// PodCIDR's size after the one before, node 1's right after the nodes' network.

// compNodeInit is the binary of an upstream node's init.
const compNodeInit = "tfk8s-nodeinit"

// Addresses of the cluster's Services that are not the API server's.
const (
	// ClusterDNSIP is the kube-dns Service's ClusterIP, the pods' name server.
	ClusterDNSIP = "10.96.0.10"
	// sandboxImage is containerd's default pause image, pushed into the registry by
	// make images.
	sandboxImage = "registry.k8s.io/pause:3.10.2"
)

// upstreamNodeBinaries are the programs an upstream node runs, in bin/.
var upstreamNodeBinaries = []string{compNodeInit, "kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "cni/bridge", "cni/host-local", "cni/loopback", "cni/portmap"}

// upstreamNetworks returns the nodes' network (the host bridge's) and each node's pod
// network, split off opts.PodCIDR; checkNodes made sure they fit.
func upstreamNetworks(opts Options) (netip.Prefix, []netip.Prefix) {
	cidrs, _ := nodePodCIDRs(opts.PodCIDR, max(opts.Nodes, 1)+1)
	return cidrs[0], cidrs[1:]
}

// clusterCIDR is the smallest network that holds every node's pod network.
func clusterCIDR(pods []netip.Prefix) netip.Prefix {
	first, last := pods[0], pods[len(pods)-1]
	for bits := first.Bits(); bits >= 0; bits-- {
		p, _ := first.Addr().Prefix(bits)
		if p.Contains(last.Addr()) {
			return p
		}
	}
	return netip.MustParsePrefix("0.0.0.0/0")
}

// upstreamNodeConfigs returns the localnode.Config of every node of the cluster.
func upstreamNodeConfigs(opts Options) []localnode.Config {
	network, pods := upstreamNetworks(opts)
	host := network.Masked().Addr().Next()
	addrs := make([]netip.Addr, len(pods))
	for i, a := 0, host.Next(); i < len(pods); i, a = i+1, a.Next() {
		addrs[i] = a
	}
	nodes := clusterNodes(opts)
	configs := make([]localnode.Config, len(nodes))
	for i, n := range nodes {
		var peers []localnode.Peer
		for j := range nodes {
			if j != i {
				peers = append(peers, localnode.Peer{Address: addrs[j], PodCIDR: pods[j]})
			}
		}
		tlsCert, tlsKey := kubeletServingFiles(n.stateDir)
		configs[i] = localnode.Config{
			Name:                  n.name,
			StateDir:              n.stateDir,
			BinDir:                opts.BinDir,
			Kubeconfig:            filepath.Join(n.stateDir, "kubelet.kubeconfig"),
			ProxyKubeconfig:       filepath.Join(n.stateDir, "kube-proxy.kubeconfig"),
			ProvisionerKubeconfig: filepath.Join(n.stateDir, "provisioner.kubeconfig"),
			ClientCAFile:          filepath.Join(n.stateDir, "kubelet-client-ca.crt"),
			TLSCertFile:           tlsCert,
			TLSKeyFile:            tlsKey,
			Bridge:                opts.Bridge,
			HostAddress:           netip.PrefixFrom(host, network.Bits()),
			Address:               addrs[i],
			PodCIDR:               pods[i],
			Peers:                 peers,
			ClusterCIDR:           clusterCIDR(pods),
			ClusterDNS:            netip.MustParseAddr(ClusterDNSIP),
			ClusterDomain:         opts.ClusterDomain,
			RegistryMirror:        registryURL(opts),
			HostPorts:             localnode.HostPorts{APIServer: opts.Ports.APIServer, DNS: opts.Ports.DNS, S3: opts.Ports.S3},
			SandboxImage:          sandboxImage,
			GPUs:                  opts.GPUs,
			DRAGPUs:               opts.DRAGPUs,
			CgroupRoot:            "/tfk8s/" + n.name + "-" + shortHash(opts.Dir),
			KubeletPort:           opts.Ports.Kubelet,
			Resolvers:             []netip.Addr{host},
		}
	}
	return configs
}

// shortHash tells clusters apart in names the host shares: cgroups.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

// provisionerUser is the identity of the nodes' claim provisioners, bound to the
// ClusterRole of the same name.
const provisionerUser = "local-cluster:volume-provisioner"

// writeNodeFiles writes a node's Config and the credentials it reads from its own
// state directory: a kubeconfig each for the kubelet (system:node:NAME, which the Node
// authorizer confines to its node's objects), kube-proxy (system:kube-proxy, bound to
// system:node-proxier by default) and the provisioner, and the CA of the API server's
// kubelet client certificate. None holds the administrator's token.
func writeNodeFiles(cp *controlplane.ControlPlane, c localnode.Config, clientCA string) error {
	if err := c.Save(); err != nil {
		return err
	}
	identities := []struct {
		path, user string
		groups     []string
	}{
		{c.Kubeconfig, "system:node:" + c.Name, []string{"system:nodes"}},
		{c.ProxyKubeconfig, "system:kube-proxy", nil},
		{c.ProvisionerKubeconfig, provisionerUser, nil},
	}
	for _, id := range identities {
		if err := cp.WriteClientKubeconfig(id.path, id.user, id.groups, certValidity); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(clientCA)
	if err != nil {
		return fmt.Errorf("reading %s for node %s: %w", clientCA, c.Name, err)
	}
	return writeFileAtomic(c.ClientCAFile, data, 0o600)
}

// ensureProvisionerRole lets the nodes' provisioners do what provisioning takes:
// volumes, claims, the StorageClass, events, and reading nodes.
func ensureProvisionerRole(ctx context.Context, c client.Client) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: provisionerUser}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, role, func() error {
		role.Rules = []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get", "list", "watch", "create", "delete", "update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			// A claim's directory takes the fsGroup of the pods that mount it.
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing ClusterRole %s: %w", role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}}
	_, err = controllerutil.CreateOrUpdate(ctx, c, binding, func() error {
		binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
		binding.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: provisionerUser}}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing ClusterRoleBinding %s: %w", binding.Name, err)
	}
	return nil
}

// apiServerAddress is where kube-apiserver listens: on the bridge for upstream nodes,
// whose kubelets reach it from their own network namespaces; else on loopback ("").
func apiServerAddress(opts Options) string {
	br, _ := bridgeIP(opts.PodCIDR) // checked by withDefaults
	return br.String()
}

// startNodeNetwork creates the host bridge of upstream nodes, with the host's address
// on it, before the components that listen there start, and the host's side of the
// nodes' network. It reports whether it created the bridge, even on error.
func startNodeNetwork(ctx context.Context, opts Options, p paths, logf func(string, ...any)) (bool, error) {
	network, _ := upstreamNetworks(opts)
	created, err := ensureBridge(opts.Bridge, network.String())
	if created {
		logf("bridge %s created for the nodes' network %s", opts.Bridge, network)
	}
	if err != nil {
		return created, err
	}
	return created, setUpHostNetwork(ctx, opts, p, logf)
}

// nodeDeps are what the nodes' start needs of the cluster.
type nodeDeps struct {
	// cp is the control plane, which signs the nodes' client certificates; cfg
	// reaches it as the administrator.
	cp  *controlplane.ControlPlane
	cfg *rest.Config
	// registry is the account the nodes pull with.
	registry registryCredential
	// clientCA is the CA of kube-apiserver's kubelet client certificate, which the
	// kubelets trust; servingCA signs the kubelets' serving certificates.
	clientCA  string
	servingCA controlplane.KeyPair
}

// startNodes starts every node's tfk8s-nodeinit and waits until each Node is Ready;
// without a node, it starts none. The pod networks must not overlap what the host
// routes elsewhere.
func startNodes(ctx context.Context, l launcher, d nodeDeps) error {
	if l.opts.WithoutNode {
		return nil
	}
	nodes := clusterNodes(l.opts)
	routes, err := hostRoutes()
	if err != nil {
		return err
	}
	if err := checkPodCIDRsFree(nodes, routes); err != nil {
		return err
	}
	c, err := client.New(d.cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	return startUpstreamNodes(ctx, l, c, nodes, d)
}

// startUpstreamNodes starts every node's tfk8s-nodeinit, all at once, and waits until
// each Node is Ready.
func startUpstreamNodes(ctx context.Context, l launcher, c client.Client, nodes []clusterNode, d nodeDeps) error {
	if err := ensureHostPathPolicy(ctx, c, l.opts.AllowedHostPaths); err != nil {
		return err
	}
	if err := ensureProvisionerRole(ctx, c); err != nil {
		return err
	}
	if l.opts.DRAGPUs > 0 {
		if err := ensureDeviceClass(ctx, c); err != nil {
			return err
		}
	}
	configs := upstreamNodeConfigs(l.opts)
	for i := range configs {
		configs[i].RegistryAuthorization = d.registry.authorization()
	}
	if l.opts.RealGPUs {
		if err := assignRealGPUs(ctx, l.opts.BinDir, configs); err != nil {
			return err
		}
	}
	if err := issueKubeletServing(d.servingCA, configs); err != nil {
		return err
	}
	procs := make([]*proc.Process, len(nodes))
	since := make([]time.Time, len(nodes))
	for i, n := range nodes {
		if err := writeNodeFiles(d.cp, configs[i], d.clientCA); err != nil {
			return err
		}
		p, started, err := l.ensureRunning(n.component, []string{"run", localnode.ConfigPath(n.stateDir)}, nil, false)
		if err != nil {
			return err
		}
		if started {
			since[i] = time.Now().Truncate(time.Second)
		}
		procs[i] = p
	}
	for i, n := range nodes {
		err := l.waitReady(ctx, procs[i], "node "+n.name+" to be Ready", func(ctx context.Context) error {
			node := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: n.name}, node); err != nil {
				return err
			}
			if !nodeReady(node, since[i]) {
				return errors.New("not Ready")
			}
			if err := gpusAdvertised(node, configs[i].GPUs+len(configs[i].RealGPUs)); err != nil {
				return err
			}
			return draDevicesPublished(ctx, c, n.name, l.opts.DRAGPUs)
		})
		if err != nil {
			return err
		}
	}
	return deleteStaleNodes(ctx, c, l.opts)
}

// nodeReady reports whether the node's Ready condition is True and was last reported
// at or after since: a Node left Ready by an earlier run does not count.
func nodeReady(node *corev1.Node, since time.Time) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue && !c.LastHeartbeatTime.Time.Before(since)
		}
	}
	return false
}

// gpusAdvertised wants the node to offer its fake GPUs: the device plugin registers
// with the kubelet after the node is Ready, and a job asking for GPUs at once would
// otherwise find none.
func gpusAdvertised(node *corev1.Node, gpus int) error {
	got := node.Status.Allocatable[tfjob.GPUResource]
	if got.Value() != int64(gpus) {
		return fmt.Errorf("%s allocatable %s, want %d", tfjob.GPUResource, got.String(), gpus)
	}
	return nil
}

// checkUpstreamNodeBinaries wants what an upstream node runs: its programs in binDir,
// runc and nft on the host.
func checkUpstreamNodeBinaries(binDir string) error {
	var missing []string
	for _, name := range upstreamNodeBinaries {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing from %s: %s (run make build tools)", binDir, strings.Join(missing, ", "))
	}
	for _, tool := range []string{runcPathOnHost, "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: the upstream node runs containers with runc and kube-proxy programs nftables (apt-get install -y runc nftables)", tool)
		}
	}
	return nil
}

// runcPathOnHost is the runc containerd's shim runs (Debian's).
const runcPathOnHost = "/usr/sbin/runc"

// cleanUpNode runs `tfk8s-nodeinit cleanup`, which removes what a node that
// did not stop cleanly leaves: processes and cgroups, the host's route to its pods and
// its veth. It does nothing for a node that never ran from here.
func cleanUpNode(ctx context.Context, opts Options, n clusterNode) error {
	config := localnode.ConfigPath(n.stateDir)
	if _, err := os.Stat(config); err != nil || opts.BinDir == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(opts.BinDir, compNodeInit), "cleanup", config).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cleaning up node %s: %w: %s", n.name, err, bytes.TrimSpace(out))
	}
	return nil
}

// upstreamKubeletAddrs are where the kubelet API of each upstream node listens, in
// the node's network namespace, by the node's component name.
func upstreamKubeletAddrs(opts Options) map[string]string {
	addrs := map[string]string{}
	if opts.WithoutNode {
		return addrs
	}
	nodes := clusterNodes(opts)
	for i, c := range upstreamNodeConfigs(opts) {
		addrs[nodes[i].component] = netip.AddrPortFrom(c.Address, uint16(c.KubeletPort)).String()
	}
	return addrs
}
