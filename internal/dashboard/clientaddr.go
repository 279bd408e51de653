package dashboard

import (
	"net/http"
	"net/netip"
	"strings"
)

// TrustedProxyFlag names the setting that lists the proxies whose X-Forwarded-For
// the dashboard believes; TrustedProxyValue is the chart's value of it.
const (
	TrustedProxyFlag  = "--trusted-proxy"
	TrustedProxyValue = "dashboard.trustedProxies"
)

// clientAddr is the address of the client a request comes from. A peer in trusted
// (an ingress) speaks for the client: X-Forwarded-For is read from its right end,
// past the trusted proxies, to the first address that is not one, which the last
// trusted proxy saw itself. Entries further left are the client's to write and are
// never read. Anything else is the peer's own address.
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	peer := hostOf(r.RemoteAddr)
	if !inPrefixes(peer, trusted) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		addr, err := netip.ParseAddr(hostOf(hop))
		if err != nil {
			return peer
		}
		if !inPrefixes(addr.String(), trusted) {
			return addr.Unmap().String()
		}
		peer = addr.String()
	}
	return peer
}

// inPrefixes reports whether addr is an IP address in one of prefixes.
func inPrefixes(addr string, prefixes []netip.Prefix) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
