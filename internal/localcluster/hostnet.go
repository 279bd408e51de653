package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/tfk8s/tfk8s/internal/nft"
)

// sysctlConf holds the per-interface IPv4 sysctls.
const sysctlConf = "/proc/sys/net/ipv4/conf"

// hostNetRecordFile is where, in the state directory's cluster/, the forwarding
// flags the cluster turned on are recorded with their previous values.
const hostNetRecordFile = "host-network.json"

// hostNetObserved is what the host has of the cluster's network.
type hostNetObserved struct {
	// record is what the cluster turned on before, from the state directory.
	record forwardingRecord
	// uplinks are the interfaces the host routes through, but lo and the bridge.
	uplinks []string
	// forwarding are the current flags of the bridge, the uplinks and the recorded
	// interfaces that exist.
	forwarding map[string]string
	// exists says the cluster's table is there; version is its rules' version.
	exists  bool
	version string
	// claimed are the uplinks other clusters' tables hold forwarding on for.
	claimed map[string]bool
}

// setUpHostNetwork masquerades what the pods and nodes of an upstream cluster send out
// of the host, turns on forwarding where they need it and records what it was before.
// What is in place already is left alone, so that a second up changes nothing.
func setUpHostNetwork(ctx context.Context, opts Options, p paths, logf func(string, ...any)) error {
	obs, err := observeHostNet(ctx, opts, p)
	if err != nil {
		return err
	}
	want := append([]string{opts.Bridge}, obs.uplinks...)
	turnOn, record := planForwarding(want, obs.forwarding, obs.record, obs.claimed)
	// Recorded first: a crash between here and the end leaves down what to undo.
	if !maps.Equal(record, obs.record) {
		if err := saveForwardingRecord(p, record); err != nil {
			return err
		}
	}
	// The table before the flags: no uplink forwards before its filter is there.
	h := hostNetOf(opts, record)
	if script, version := renderHostNet(h); !obs.exists || version != obs.version {
		if err := nft.Apply(ctx, script); err != nil {
			return fmt.Errorf("masquerading the cluster's traffic out of the host: %w", err)
		}
		logf("nftables table ip %s: masquerade of %s, replies only from %v", h.table, joinPrefixes(h.sources), h.uplinks)
	}
	for _, iface := range turnOn {
		if err := writeForwarding(iface, "1"); err != nil {
			return err
		}
	}
	if len(turnOn) > 0 {
		logf("forwarding turned on for %s, recorded in %s", strings.Join(turnOn, ", "), recordPath(p))
	}
	return nil
}

// tearDownHostNetwork undoes setUpHostNetwork: every forwarding flag the cluster
// turned on goes back to its previous value, unless another cluster holds it on, then
// the table goes, and the record last.
func tearDownHostNetwork(ctx context.Context, opts Options, p paths) error {
	obs, err := observeHostNet(ctx, opts, p)
	if err != nil {
		return err
	}
	var errs []error
	for iface, prev := range planRestore(obs.record, obs.forwarding, obs.claimed) {
		errs = append(errs, writeForwarding(iface, prev))
	}
	if obs.exists {
		if err := nft.Apply(ctx, "delete table ip "+hostNetTable(opts.Dir)+"\n"); err != nil {
			errs = append(errs, fmt.Errorf("deleting the cluster's nftables table: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(recordPath(p)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the forwarding record: %w", err)
	}
	return nil
}

// hostNetLeftovers lists what down left of an upstream cluster's host network: its
// table, and each recorded forwarding flag not back to its previous value.
func hostNetLeftovers(ctx context.Context, opts Options, p paths) []string {
	obs, err := observeHostNet(ctx, opts, p)
	if err != nil {
		return []string{"unknown host network: " + err.Error()}
	}
	return hostNetLeftoversOf(obs, hostNetTable(opts.Dir))
}

// hostNetLeftoversOf lists what is left in obs: the table, and each recorded flag
// that down would write back.
func hostNetLeftoversOf(obs hostNetObserved, table string) []string {
	var left []string
	if obs.exists {
		left = append(left, "nftables table ip "+table)
	}
	restore := planRestore(obs.record, obs.forwarding, obs.claimed)
	for _, iface := range slices.Sorted(maps.Keys(restore)) {
		left = append(left, fmt.Sprintf("sysctl net.ipv4.conf.%s.forwarding=%s (was %s)", iface, obs.forwarding[iface], restore[iface]))
	}
	return left
}

// observeHostNet reads the record, the host's routes, forwarding flags and nftables
// tables.
func observeHostNet(ctx context.Context, opts Options, p paths) (hostNetObserved, error) {
	var obs hostNetObserved
	var err error
	if obs.record, err = loadForwardingRecord(p); err != nil {
		return obs, err
	}
	if obs.uplinks, err = routedLinks(opts.Bridge); err != nil {
		return obs, err
	}
	obs.forwarding = map[string]string{}
	for _, iface := range append(append([]string{opts.Bridge}, obs.uplinks...), slices.Collect(maps.Keys(obs.record))...) {
		data, err := os.ReadFile(filepath.Join(sysctlConf, iface, "forwarding"))
		if err == nil {
			obs.forwarding[iface] = strings.TrimSpace(string(data))
		}
	}
	tables, err := nft.ListTables(ctx)
	if err != nil {
		return obs, fmt.Errorf("listing the host's nftables tables: %w", err)
	}
	obs.claimed = map[string]bool{}
	own := hostNetTable(opts.Dir)
	for _, t := range tables {
		switch {
		case t.Name == own:
			obs.exists, obs.version = true, t.Sets[uplinksSet].Comment
		case strings.HasPrefix(t.Name, "tfk8s-"):
			for _, iface := range t.Sets[uplinksSet].Elements {
				obs.claimed[iface] = true
			}
		}
	}
	return obs, nil
}

// routedLinks lists the interfaces the host routes IPv4 through, in any table but
// the local one, except lo and the bridge.
func routedLinks(bridge string) ([]string, error) {
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("listing the host's routes: %w", err)
	}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing the host's interfaces: %w", err)
	}
	names := map[int]string{}
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	var out []string
	for _, r := range routes {
		if r.Table == unix.RT_TABLE_LOCAL {
			continue
		}
		indexes := []int{r.LinkIndex}
		for _, hop := range r.MultiPath {
			indexes = append(indexes, hop.LinkIndex)
		}
		for _, i := range indexes {
			if name := names[i]; name != "" && name != "lo" && name != bridge {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// writeForwarding sets net.ipv4.conf.<iface>.forwarding.
func writeForwarding(iface, value string) error {
	if err := os.WriteFile(filepath.Join(sysctlConf, iface, "forwarding"), []byte(value+"\n"), 0o644); err != nil {
		return fmt.Errorf("setting net.ipv4.conf.%s.forwarding to %s: %w", iface, value, err)
	}
	return nil
}

// recordPath is where the forwarding record of the cluster in p lives.
func recordPath(p paths) string { return filepath.Join(p.run, hostNetRecordFile) }

// hostNetRecord is the record's file.
type hostNetRecord struct {
	// Forwarding are the previous values of net.ipv4.conf.<interface>.forwarding.
	Forwarding forwardingRecord `json:"forwarding"`
}

// loadForwardingRecord reads the record; none gives an empty one.
func loadForwardingRecord(p paths) (forwardingRecord, error) {
	data, err := os.ReadFile(recordPath(p))
	if errors.Is(err, os.ErrNotExist) {
		return forwardingRecord{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the forwarding record: %w", err)
	}
	var r hostNetRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding the forwarding record %s: %w", recordPath(p), err)
	}
	if r.Forwarding == nil {
		r.Forwarding = forwardingRecord{}
	}
	return r.Forwarding, nil
}

// saveForwardingRecord writes the record.
func saveForwardingRecord(p paths, record forwardingRecord) error {
	data, err := json.MarshalIndent(hostNetRecord{Forwarding: record}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the forwarding record: %w", err)
	}
	return writeFileAtomic(recordPath(p), append(data, '\n'), 0o600)
}
