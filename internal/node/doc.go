// Package node is tfk8s-node, a kubelet for processes: it registers a Node, keeps its
// Lease, and runs every pod bound to it as runc containers on the local machine.
//
// The image of a container is ignored: its root filesystem is the host's own, read-only
// (an overlay whose lower layer is the host root and whose upper layer, in memory, only
// receives the mount points runc creates), with a writable tmpfs at /tmp and the pod's
// volumes, /etc/hosts, /etc/resolv.conf and /etc/hostname bind-mounted. Whatever a
// container runs must therefore be installed on the host.
//
// Each pod gets a network namespace with a veth into the node's bridge and an IP from the
// node's pod CIDR; containers get their own mount, PID, IPC and UTS namespaces. The
// kubelet API (HTTPS) serves container logs so `kubectl logs [-f]` works through the API
// server.
//
// Layout of the state directory:
//
//	runc/                 runc's state (--root)
//	layers/               a tmpfs holding the overlay upper layers, one per container
//	ipam/<ip>             one file per allocated pod IP, holding the pod UID
//	pods/<uid>/           a pod's sandbox: hosts, resolv.conf, volumes, container bundles
//	logs/<ns>_<pod>_<uid>/<container>/<restart>.log   container logs (CRI format)
//	pv/<claim uid>/       directories of the volumes the local provisioner creates
package node
