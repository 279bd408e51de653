package dashboard

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestClientAddr: X-Forwarded-For is believed from trusted peers only, read from its
// right end past the trusted proxies; what a client writes to its left is not read.
func TestClientAddr(t *testing.T) {
	ingress := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	tests := []struct {
		name    string
		peer    string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{name: "no proxies trusted", peer: "10.0.0.5:4000", xff: []string{"198.51.100.7"}, want: "10.0.0.5"},
		{name: "an untrusted peer's header is ignored", peer: "192.0.2.9:4000", xff: []string{"198.51.100.7"}, trusted: ingress, want: "192.0.2.9"},
		{name: "the client the ingress saw", peer: "10.0.0.5:4000", xff: []string{"198.51.100.7"}, trusted: ingress, want: "198.51.100.7"},
		{name: "what the client wrote to the left is not read", peer: "10.0.0.5:4000", xff: []string{"203.0.113.1, 198.51.100.7"}, trusted: ingress, want: "198.51.100.7"},
		{name: "past a chain of trusted proxies", peer: "10.0.0.5:4000", xff: []string{"203.0.113.1, 198.51.100.7, 10.1.1.1", "10.2.2.2"}, trusted: ingress, want: "198.51.100.7"},
		{name: "IPv6 with a port", peer: "[fd00::5]:4000", xff: []string{"[2001:db8::7]:5555"}, trusted: ingress, want: "2001:db8::7"},
		{name: "garbage: the peer", peer: "10.0.0.5:4000", xff: []string{"not-an-address"}, trusted: ingress, want: "10.0.0.5"},
		{name: "no header: the peer", peer: "10.0.0.5:4000", trusted: ingress, want: "10.0.0.5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/signin", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if diff := cmp.Diff(tc.want, clientAddr(r, tc.trusted)); diff != "" {
				t.Errorf("clientAddr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSignInCountsTheClientBehindATrustedProxy: behind a trusted ingress, a client's
// failures claiming no user hold back that client, not the others the ingress serves.
func TestSignInCountsTheClientBehindATrustedProxy(t *testing.T) {
	s, _ := newTestServer(t, true)
	s.opts.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	signIn := func(client string) int {
		r := httptest.NewRequest(http.MethodPost, "/signin", nil)
		r.Host, r.RemoteAddr = "127.0.0.1:8686", "10.0.0.5:4000"
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		r.Header.Set("X-Forwarded-For", client)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	for range signInBurst {
		signIn("198.51.100.7")
	}
	if code := signIn("198.51.100.7"); code != http.StatusTooManyRequests {
		t.Errorf("the client past its burst: %d, want 429", code)
	}
	if code := signIn("198.51.100.8"); code != http.StatusUnauthorized {
		t.Errorf("another client behind the same ingress: %d, want 401", code)
	}
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := parseTrustedProxies([]string{"10.0.0.0/8", "192.0.2.4", "10.1.2.3/16", "fd00::1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.4/32"),
		netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::1/128")}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("parseTrustedProxies (-want +got):\n%s", diff)
	}
	if _, err := parseTrustedProxies([]string{"ingress"}); err == nil || err.Error() != `--trusted-proxy "ingress": want an address or a CIDR such as 10.0.0.0/8` {
		t.Errorf("error %v, want one naming --trusted-proxy", err)
	}
}
