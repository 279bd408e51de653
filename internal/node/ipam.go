package node

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// podCIDR is the node's IPv4 pod network.
type podCIDR struct{ prefix netip.Prefix }

// parsePodCIDR reads an IPv4 CIDR with room for the bridge and at least one pod.
func parsePodCIDR(s string) (podCIDR, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return podCIDR{}, fmt.Errorf("parsing pod CIDR %q: %w", s, err)
	}
	if !p.Addr().Is4() {
		return podCIDR{}, fmt.Errorf("pod CIDR %q is not IPv4", s)
	}
	if p.Bits() > 30 {
		return podCIDR{}, fmt.Errorf("pod CIDR %q is smaller than a /30", s)
	}
	return podCIDR{prefix: p.Masked()}, nil
}

// String is the CIDR in canonical form, as written to the Node's spec.podCIDR.
func (c podCIDR) String() string { return c.prefix.String() }

// gateway is the bridge's address: the first host address.
func (c podCIDR) gateway() netip.Addr { return c.prefix.Addr().Next() }

// broadcast is the last address of the network.
func (c podCIDR) broadcast() netip.Addr {
	a := c.prefix.Addr().As4()
	host := uint32(1)<<(32-c.prefix.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// assignable reports whether a may be given to a pod: inside the network, not the
// network, broadcast or gateway address.
func (c podCIDR) assignable(a netip.Addr) bool {
	return c.prefix.Contains(a) && a != c.prefix.Addr() && a != c.broadcast() && a != c.gateway()
}

// nextFreeIP returns the first assignable address after last, wrapping around, that is
// not in used. Starting after the last one handed out, rather than at the lowest free
// one, keeps a released address unused for as long as possible, so a stale peer does not
// reach a new pod at an old pod's address.
func nextFreeIP(c podCIDR, last netip.Addr, used map[netip.Addr]bool) (netip.Addr, error) {
	if !c.prefix.Contains(last) {
		last = c.gateway()
	}
	a := last
	for {
		a = a.Next()
		if !c.prefix.Contains(a) {
			a = c.prefix.Addr()
		}
		if c.assignable(a) && !used[a] {
			return a, nil
		}
		if a == last {
			return netip.Addr{}, fmt.Errorf("no free address left in pod CIDR %s", c)
		}
	}
}

// ipam hands out pod IPs, one file per address under dir holding the owner's pod UID, so
// the allocation survives a restart of the node and is visible to an operator.
type ipam struct {
	cidr podCIDR
	dir  string

	mu   sync.Mutex
	last netip.Addr
}

// lastFile remembers the address handed out last, for nextFreeIP.
const lastFile = "last"

func newIPAM(cidr podCIDR, dir string) (*ipam, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the IPAM directory: %w", err)
	}
	m := &ipam{cidr: cidr, dir: dir, last: cidr.gateway()}
	if data, err := os.ReadFile(filepath.Join(dir, lastFile)); err == nil {
		if a, err := netip.ParseAddr(strings.TrimSpace(string(data))); err == nil {
			m.last = a
		}
	}
	return m, nil
}

// allocate returns the address of pod uid, reserving a new one if it has none.
func (m *ipam) allocate(uid string) (netip.Addr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	owners, err := m.owners()
	if err != nil {
		return netip.Addr{}, err
	}
	used := map[netip.Addr]bool{}
	for a, owner := range owners {
		if owner == uid {
			return a, nil
		}
		used[a] = true
	}
	a, err := nextFreeIP(m.cidr, m.last, used)
	if err != nil {
		return netip.Addr{}, err
	}
	f, err := os.OpenFile(filepath.Join(m.dir, a.String()), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("reserving pod IP %s: %w", a, err)
	}
	_, werr := f.WriteString(uid)
	if err := errors.Join(werr, f.Close()); err != nil {
		return netip.Addr{}, fmt.Errorf("reserving pod IP %s: %w", a, err)
	}
	m.last = a
	_ = os.WriteFile(filepath.Join(m.dir, lastFile), []byte(a.String()), 0o600)
	return a, nil
}

// release frees every address held by pod uid.
func (m *ipam) release(uid string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	owners, err := m.owners()
	if err != nil {
		return err
	}
	for a, owner := range owners {
		if owner == uid {
			if err := os.Remove(filepath.Join(m.dir, a.String())); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("releasing pod IP %s: %w", a, err)
			}
		}
	}
	return nil
}

// owners maps each reserved address to its pod UID.
func (m *ipam) owners() (map[netip.Addr]string, error) {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return nil, fmt.Errorf("reading the IPAM directory: %w", err)
	}
	owners := map[netip.Addr]string{}
	for _, e := range entries {
		a, err := netip.ParseAddr(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(m.dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading the owner of pod IP %s: %w", a, err)
		}
		owners[a] = strings.TrimSpace(string(data))
	}
	return owners, nil
}
