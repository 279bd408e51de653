// Package node is tfk8s-node, a kubelet for processes: it registers a Node, keeps its
// Lease, and runs every pod bound to it as runc containers on the local machine.
//
// A container runs on its image, as with a kubelet: the node pulls it by reference
// (through a registry mirror first, when one is configured), under the container's
// imagePullPolicy and with the pod's imagePullSecrets, caches its blobs by digest and
// unpacks it once into a root directory keyed by its config digest (layers in order,
// whiteouts honoured). The container's root is an overlay whose lower layer is that
// root and whose upper layer, in memory, only receives the mount points runc creates;
// runc makes it read-only. The image's entrypoint, cmd, env, working directory and user
// apply under Kubernetes' rules. A writable tmpfs is mounted at /tmp and the pod's
// volumes, /etc/hosts, /etc/resolv.conf and /etc/hostname are bind-mounted.
//
// Only images named by --host-image (Options.HostImages) run on the host's own root
// instead, read-only, with the node's bin directory mounted and the host's credentials
// masked: whatever such a container runs must be installed on the host.
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
//	images/               the image cache (--image-dir; see imageStore), kept across runs
package node
