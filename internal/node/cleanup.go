package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// cleanupTimeout bounds the runc commands of a cleanup.
const cleanupTimeout = time.Minute

// Cleanup removes what a node with these options leaves on the host: its runc
// containers (killed), every mount under its state directory, its pods' network
// namespaces, veths and cgroups, its bridge, and the runtime parts of its state
// directory. Container logs and the local provisioner's volumes stay. Run calls it
// before starting and when stopping; `tfk8s-node --cleanup` calls it after a crash.
func Cleanup(opts Options) error {
	opts, err := opts.withHostDefaults()
	if err != nil {
		return err
	}
	if _, err := os.Stat(opts.StateDir); os.IsNotExist(err) {
		return network{bridge: opts.Bridge}.tearDown()
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var errs []error
	r := runc{bin: opts.RuncPath, root: filepath.Join(opts.StateDir, "runc")}
	ids, err := r.list(ctx)
	errs = append(errs, err)
	for _, id := range ids {
		errs = append(errs, r.forceDelete(ctx, id))
	}
	uids := map[string]bool{}
	if entries, err := os.ReadDir(filepath.Join(opts.StateDir, "pods")); err == nil {
		for _, e := range entries {
			uids[e.Name()] = true
		}
	}
	if cidr, err := parsePodCIDR(opts.PodCIDR); err == nil {
		if m, err := newIPAM(cidr, filepath.Join(opts.StateDir, "ipam")); err == nil {
			owners, _ := m.owners()
			for _, uid := range owners {
				uids[uid] = true
			}
		}
	}
	net := network{bridge: opts.Bridge}
	for uid := range uids {
		errs = append(errs, net.removePod(uid))
	}
	errs = append(errs, unmountUnder(opts.StateDir))
	cg := detectCgroups("/sys/fs/cgroup")
	for uid := range uids {
		errs = append(errs, cg.removePod(uid))
	}
	errs = append(errs, net.tearDown())
	if left, err := MountsUnder(opts.StateDir); err != nil || len(left) > 0 {
		errs = append(errs, fmt.Errorf("mounts remain under %s: %v %w", opts.StateDir, left, err))
	} else {
		for _, d := range []string{"pods", "layers", "ipam", "runc"} {
			errs = append(errs, os.RemoveAll(filepath.Join(opts.StateDir, d)))
		}
	}
	cg.removeParent()
	return joinErrs("cleaning up node "+opts.NodeName, errs)
}

// joinErrs joins the non-nil errors of one step, naming the step.
func joinErrs(step string, errs []error) error {
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	return nil
}
