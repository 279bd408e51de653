// Package localnode runs one node of a local cluster on the upstream Kubernetes node:
// containerd and the kubelet, with kube-proxy for ClusterIPs, a device plugin for fake
// GPUs and a provisioner for claims, built from their Go modules.
//
// A node is a network namespace and a private mount namespace on the host, in the shape
// of a kind node without a container engine. Its init process (tfk8s-nodeinit) runs in
// two halves. The outer half stays in the host's namespaces: it creates the node's
// cgroups, starts the inner half in new mount, network and UTS namespaces, joins the
// inner half's network namespace to the host bridge with a veth, and, once the inner
// half has ended, kills what is left in the node's cgroups and removes them. The inner
// half makes every mount private, lays out the fixed paths the node's programs write
// (below) on the node's state directory or on tmpfs, masks the host sysctls the kubelet
// would change, addresses its end of the veth, and supervises containerd, the kubelet
// and kube-proxy until it is told to stop.
//
// Layout of a node's state directory, as the node's own programs see it:
//
//	node.json            the node's Config
//	containerd/          containerd's root (images, snapshots, containers)
//	containerd.sock      containerd's CRI and API socket
//	certs.d/_default/    hosts.toml: the cluster's registry mirrors every registry
//	cni/                 the CNI configuration (bridge, host-local IPAM, portmap)
//	kubelet/             bind-mounted on /var/lib/kubelet (pods' volumes, device plugins)
//	logs/                bind-mounted on /var/log/pods: container logs, rotated by the kubelet
//	volumes/             the directories the provisioner makes for claims
//	*.yaml, *.log        the kubelet's and kube-proxy's configuration; each program's log
//
// /run/containerd, /var/lib/cni and /var/log/containers are tmpfs in the node's mount
// namespace, so that nothing of the node is written outside its state directory and
// everything it mounted goes with the namespace.
package localnode
