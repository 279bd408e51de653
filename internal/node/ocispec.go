package node

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// containerConfig is what the OCI runtime spec of one container run is built from.
type containerConfig struct {
	// Rootfs is the container's root: an overlay over ImageRoot, the image's unpacked
	// root (or the host's root for --host-image images).
	Rootfs, ImageRoot string
	Args              []string
	Env               []string
	Cwd               string
	// Hostname, when set, gives the container its own UTS namespace with that name.
	Hostname string
	// NetNSPath is the pod's network namespace; empty shares the host's.
	NetNSPath string
	// HostPID and HostIPC share the host's PID and IPC namespaces.
	HostPID, HostIPC bool
	// Mounts are the pod's bind mounts (volumes, hosts, resolv.conf, termination log),
	// mounted after the standard ones in this order.
	Mounts []specs.Mount
	// UID, GID and AdditionalGids are the process's identity.
	UID, GID       uint32
	AdditionalGids []uint32
	// NoNewPrivileges is the inverse of allowPrivilegeEscalation.
	NoNewPrivileges bool
	// Privileged grants every capability and unmasks /proc and /sys.
	Privileged bool
	// CapAdd and CapDrop adjust the default capabilities ("NET_ADMIN" or
	// "CAP_NET_ADMIN"; "ALL" drops every one).
	CapAdd, CapDrop []string
	Sysctls         map[string]string
	// CgroupsPath is the container's cgroup, relative to each hierarchy's root.
	CgroupsPath string
	// CPUShares, CPUQuota and CPUPeriod come from the CPU request and limit.
	CPUShares uint64
	CPUQuota  int64
	CPUPeriod uint64
	// MemoryLimit, when non-zero, is set on the container's own cgroup (when the node
	// cannot set it on the parent cgroup it watches for OOM kills).
	MemoryLimit int64
	// Devices are host devices to create and allow, such as GPUs.
	Devices []specs.LinuxDevice
	// MaskedPaths hide more host paths, such as the node's state directory.
	MaskedPaths []string
}

// defaultCapabilities are the container runtimes' default set.
var defaultCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// allCapabilities are those a privileged container gets.
var allCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
	"CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
	"CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
	"CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
}

// Paths runc's default spec masks or makes read-only in /proc and /sys.
var (
	defaultMaskedPaths = []string{
		"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
		"/proc/scsi",
	}
	defaultReadonlyPaths = []string{
		"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
	}
)

// buildSpec returns the OCI runtime spec of a container: the host's root read-only, a
// tmpfs at /tmp, the standard /proc, /dev and /sys, then cfg's mounts; its own mount,
// PID, IPC and UTS namespaces and the pod's network namespace.
func buildSpec(cfg containerConfig) *specs.Spec {
	cwd := cfg.Cwd
	if cwd == "" {
		cwd = "/"
	}
	caps := capabilities(cfg.Privileged, cfg.CapAdd, cfg.CapDrop)
	s := &specs.Spec{
		Version: specs.Version,
		Root:    &specs.Root{Path: cfg.Rootfs, Readonly: true},
		Process: &specs.Process{
			Args: cfg.Args,
			Env:  cfg.Env,
			Cwd:  cwd,
			User: specs.User{UID: cfg.UID, GID: cfg.GID, AdditionalGids: cfg.AdditionalGids},
			Capabilities: &specs.LinuxCapabilities{
				Bounding: caps, Effective: caps, Permitted: caps,
			},
			NoNewPrivileges: cfg.NoNewPrivileges,
		},
		Hostname: cfg.Hostname,
		Mounts:   append(standardMounts(cfg.NetNSPath == ""), cfg.Mounts...),
		Linux: &specs.Linux{
			Namespaces:  namespaces(cfg),
			CgroupsPath: cfg.CgroupsPath,
			Sysctl:      cfg.Sysctls,
			Devices:     cfg.Devices,
			Resources:   resources(cfg),
		},
	}
	if !cfg.Privileged {
		s.Linux.MaskedPaths = append(slices.Clone(defaultMaskedPaths), cfg.MaskedPaths...)
		s.Linux.ReadonlyPaths = slices.Clone(defaultReadonlyPaths)
	}
	return s
}

// standardMounts are /proc, /dev, /sys and /tmp. A container in the host's network
// namespace cannot mount a fresh sysfs, so it gets the host's, read-only.
func standardMounts(hostNetwork bool) []specs.Mount {
	sys := specs.Mount{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}}
	if hostNetwork {
		sys = specs.Mount{Destination: "/sys", Type: "bind", Source: "/sys", Options: []string{"rbind", "nosuid", "noexec", "nodev", "ro"}}
	}
	return []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		sys,
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
	}
}

// namespaces lists the namespaces to create or join.
func namespaces(cfg containerConfig) []specs.LinuxNamespace {
	ns := []specs.LinuxNamespace{{Type: specs.MountNamespace}}
	if !cfg.HostPID {
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace})
	}
	if !cfg.HostIPC {
		ns = append(ns, specs.LinuxNamespace{Type: specs.IPCNamespace})
	}
	if cfg.Hostname != "" {
		ns = append(ns, specs.LinuxNamespace{Type: specs.UTSNamespace})
	}
	if cfg.NetNSPath != "" {
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: cfg.NetNSPath})
	}
	return ns
}

// resources are the container's cgroup settings: devices denied but for the defaults
// runc adds and cfg.Devices, and the CPU share and quota.
func resources(cfg containerConfig) *specs.LinuxResources {
	r := &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}}
	for _, d := range cfg.Devices {
		major, minor := d.Major, d.Minor
		r.Devices = append(r.Devices, specs.LinuxDeviceCgroup{Allow: true, Type: d.Type, Major: &major, Minor: &minor, Access: "rwm"})
	}
	if cfg.CPUShares > 0 || cfg.CPUQuota > 0 {
		r.CPU = &specs.LinuxCPU{}
		if cfg.CPUShares > 0 {
			shares := cfg.CPUShares
			r.CPU.Shares = &shares
		}
		if cfg.CPUQuota > 0 {
			quota, period := cfg.CPUQuota, cfg.CPUPeriod
			r.CPU.Quota, r.CPU.Period = &quota, &period
		}
	}
	if cfg.MemoryLimit > 0 {
		limit := cfg.MemoryLimit
		r.Memory = &specs.LinuxMemory{Limit: &limit}
	}
	return r
}

// capabilities applies a container's added and dropped capabilities to the defaults.
func capabilities(privileged bool, add, drop []string) []string {
	if privileged {
		return slices.Clone(allCapabilities)
	}
	caps := slices.Clone(defaultCapabilities)
	for _, d := range drop {
		if d == "ALL" {
			caps = nil
			break
		}
		caps = slices.DeleteFunc(caps, func(c string) bool { return c == capName(d) })
	}
	for _, a := range add {
		if a == "ALL" {
			return slices.Clone(allCapabilities)
		}
		if c := capName(a); !slices.Contains(caps, c) {
			caps = append(caps, c)
		}
	}
	return caps
}

// capName spells a Kubernetes capability ("NET_ADMIN") as OCI does ("CAP_NET_ADMIN").
func capName(c string) string {
	if len(c) > 4 && c[:4] == "CAP_" {
		return c
	}
	return "CAP_" + c
}

// cpuPeriod is the CFS period CPU limits are expressed in, in microseconds.
const cpuPeriod = 100000

// applyContainer sets the parts of cfg that come from a pod's container and its
// image: the process line (with $(VAR) references expanded against env), working
// directory, identity, capabilities, sysctls and CPU share and quota.
func applyContainer(cfg *containerConfig, pod *corev1.Pod, c *corev1.Container, env []string, img *image, podRef string) error {
	cfg.Args = containerProcess(c, img.config, envLookup(env))
	if len(cfg.Args) == 0 {
		return fmt.Errorf("container %s: image %s has no entrypoint and no cmd, and the container has no command", c.Name, c.Image)
	}
	cfg.Env = env
	cfg.Cwd = cmp.Or(c.WorkingDir, img.config.WorkingDir)
	cfg.HostPID, cfg.HostIPC = pod.Spec.HostPID, pod.Spec.HostIPC

	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	if err := applyIdentity(cfg, pod, c, img, podRef); err != nil {
		return err
	}
	for _, g := range psc.SupplementalGroups {
		cfg.AdditionalGids = append(cfg.AdditionalGids, uint32(g))
	}
	if psc.FSGroup != nil {
		cfg.AdditionalGids = append(cfg.AdditionalGids, uint32(*psc.FSGroup))
	}
	cfg.Privileged = sc.Privileged != nil && *sc.Privileged
	cfg.NoNewPrivileges = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	if caps := sc.Capabilities; caps != nil {
		for _, a := range caps.Add {
			cfg.CapAdd = append(cfg.CapAdd, string(a))
		}
		for _, d := range caps.Drop {
			cfg.CapDrop = append(cfg.CapDrop, string(d))
		}
	}
	if len(psc.Sysctls) > 0 {
		cfg.Sysctls = map[string]string{}
		for _, s := range psc.Sysctls {
			cfg.Sysctls[s.Name] = s.Value
		}
	}
	if req, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		cfg.CPUShares = max(uint64(req.MilliValue())*1024/1000, 2)
	}
	if limit, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		cfg.CPUQuota = max(limit.MilliValue()*cpuPeriod/1000, 1000)
		cfg.CPUPeriod = cpuPeriod
	}
	return nil
}

// applyIdentity sets the user and groups of the process: the image's user, resolved in
// its own /etc/passwd and /etc/group, unless runAsUser and runAsGroup say otherwise; a
// runAsUser without runAsGroup takes its group from the image's /etc/passwd, as
// container runtimes do. runAsNonRoot is enforced with the kubelet's messages.
func applyIdentity(cfg *containerConfig, pod *corev1.Pod, c *corev1.Container, img *image, podRef string) error {
	psc := ptr.Deref(pod.Spec.SecurityContext, corev1.PodSecurityContext{})
	sc := ptr.Deref(c.SecurityContext, corev1.SecurityContext{})
	id, err := resolveUser(img.root, img.config.User)
	if err != nil {
		return fmt.Errorf("container %s: %w", c.Name, err)
	}
	runAsUser := firstInt64(sc.RunAsUser, psc.RunAsUser)
	if err := checkRunAsNonRoot(pod, c, runAsUser, id, podRef); err != nil {
		return configError{err}
	}
	if runAsUser != nil && (id.Name != "" || int64(id.UID) != *runAsUser) {
		id, _ = resolveUser(img.root, strconv.FormatInt(*runAsUser, 10))
		id.Groups = nil
	}
	cfg.UID, cfg.GID, cfg.AdditionalGids = id.UID, id.GID, id.Groups
	if gid := firstInt64(sc.RunAsGroup, psc.RunAsGroup); gid != nil {
		cfg.GID = uint32(*gid)
	}
	return nil
}

// configError marks err as a configuration error (CreateContainerConfigError)
// without changing its message, which is the kubelet's.
type configError struct{ error }

func (e configError) Is(target error) bool { return target == errConfig }
func (e configError) Unwrap() error        { return e.error }

// firstInt64 returns the first non-nil pointer.
func firstInt64(ps ...*int64) *int64 {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}
