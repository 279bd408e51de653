package controlplane

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/pki"
)

// verify checks that pair's certificate chains to ca's for usage, and returns it.
func verify(t *testing.T, pair, ca KeyPair, opts x509.VerifyOptions) *x509.Certificate {
	t.Helper()
	kp, err := tls.LoadX509KeyPair(pair.Cert, pair.Key)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(ca.Cert)
	if err != nil {
		t.Fatal(err)
	}
	opts.Roots = x509.NewCertPool()
	opts.Roots.AppendCertsFromPEM(caPEM)
	cert, err := x509.ParseCertificate(kp.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(opts); err != nil {
		t.Errorf("%s does not verify against %s: %v", pair.Cert, ca.Cert, err)
	}
	return cert
}

// TestAggregationPKI: the proxy's client certificate is a client certificate of the
// front-proxy CA, named as --requestheader-allowed-names says, and Ensure keeps it.
func TestAggregationPKI(t *testing.T) {
	dir := t.TempDir()
	a := AggregationPKIIn(dir)
	if err := a.Ensure(48 * time.Hour); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(a.ProxyClient.Cert)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Ensure(48 * time.Hour); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(a.ProxyClient.Cert)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(first) {
		t.Error("Ensure replaced a certificate still good")
	}
	cert := verify(t, a.ProxyClient, a.CA, x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if cert.Subject.CommonName != frontProxyUser {
		t.Errorf("proxy client certificate for %q, want %q", cert.Subject.CommonName, frontProxyUser)
	}
	// The API server trusts the CA that signed the proxy's certificate, allows its
	// name, and presents it; it routes to endpoints, as no kube-proxy on the host
	// translates a Service's ClusterIP.
	args := a.APIServerArgs()
	for _, want := range []string{
		"--requestheader-client-ca-file=" + a.CA.Cert,
		"--requestheader-allowed-names=" + cert.Subject.CommonName,
		"--proxy-client-cert-file=" + a.ProxyClient.Cert,
		"--proxy-client-key-file=" + a.ProxyClient.Key,
		"--enable-aggregator-routing=true",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("APIServerArgs lacks %s: %v", want, args)
		}
	}
}

// TestKeyPairIssued: a serving certificate verifies for the names and address it was
// issued for, and not as a client's; a client certificate not as a server's.
func TestKeyPairIssued(t *testing.T) {
	dir := t.TempDir()
	ca := KeyPair{Cert: dir + "/ca.crt", Key: dir + "/ca.key"}
	if err := ca.EnsureCA("test-ca", time.Hour); err != nil {
		t.Fatal(err)
	}
	serving := KeyPair{Cert: dir + "/s.crt", Key: dir + "/s.key"}
	names := pki.Names{CommonName: "node", DNSNames: []string{"node"}, IPs: []net.IP{net.ParseIP("10.244.0.2")}}
	if err := serving.EnsureIssued(ca, names, ServerAuth, time.Hour); err != nil {
		t.Fatal(err)
	}
	verify(t, serving, ca, x509.VerifyOptions{DNSName: "10.244.0.2"})
	clientCert := KeyPair{Cert: dir + "/c.crt", Key: dir + "/c.key"}
	if err := clientCert.EnsureIssued(ca, pki.Names{CommonName: "user"}, ClientAuth, time.Hour); err != nil {
		t.Fatal(err)
	}
	cert := verify(t, clientCert, ca, x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if got := cert.ExtKeyUsage; len(got) != 1 || got[0] != x509.ExtKeyUsageClientAuth {
		t.Errorf("client certificate's usages %v, want client authentication alone", got)
	}
	missing := KeyPair{Cert: dir + "/none.crt", Key: dir + "/none.key"}
	other := KeyPair{Cert: dir + "/o.crt", Key: dir + "/o.key"}
	if err := other.EnsureIssued(missing, names, ServerAuth, time.Hour); err == nil {
		t.Error("EnsureIssued signed without its CA's files")
	}
}

// TestEnsureIssuedReissues: a certificate kept from an earlier up is kept while it is
// good, and issued anew when the node's address changed, its CA was made anew, or it
// expires within a day.
func TestEnsureIssuedReissues(t *testing.T) {
	names := pki.Names{CommonName: "node", DNSNames: []string{"node"}, IPs: []net.IP{net.ParseIP("10.244.0.2")}}
	moved := pki.Names{CommonName: "node", DNSNames: []string{"node"}, IPs: []net.IP{net.ParseIP("10.9.0.2")}}
	renamed := pki.Names{CommonName: "node", DNSNames: []string{"node2"}, IPs: names.IPs}
	tests := []struct {
		name        string
		validity    time.Duration // of the first certificate
		newCA       bool
		again       pki.Names
		wantReissue bool
	}{
		{name: "a good certificate is kept", validity: 48 * time.Hour, again: names},
		{name: "another address", validity: 48 * time.Hour, again: moved, wantReissue: true},
		{name: "another DNS name", validity: 48 * time.Hour, again: renamed, wantReissue: true},
		{name: "a new CA", validity: 48 * time.Hour, newCA: true, again: names, wantReissue: true},
		{name: "expiring within a day", validity: time.Hour, again: names, wantReissue: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ca := KeyPair{Cert: dir + "/ca.crt", Key: dir + "/ca.key"}
			if err := ca.EnsureCA("test-ca", 48*time.Hour); err != nil {
				t.Fatal(err)
			}
			pair := KeyPair{Cert: dir + "/s.crt", Key: dir + "/s.key"}
			if err := pair.EnsureIssued(ca, names, ServerAuth, tc.validity); err != nil {
				t.Fatal(err)
			}
			first, err := os.ReadFile(pair.Cert)
			if err != nil {
				t.Fatal(err)
			}
			if tc.newCA {
				if err := os.Remove(ca.Cert); err != nil {
					t.Fatal(err)
				}
				if err := ca.EnsureCA("test-ca", 48*time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			if err := pair.EnsureIssued(ca, tc.again, ServerAuth, 48*time.Hour); err != nil {
				t.Fatal(err)
			}
			again, err := os.ReadFile(pair.Cert)
			if err != nil {
				t.Fatal(err)
			}
			if reissued := string(again) != string(first); reissued != tc.wantReissue {
				t.Errorf("reissued = %v, want %v", reissued, tc.wantReissue)
			}
			verify(t, pair, ca, x509.VerifyOptions{DNSName: tc.again.IPs[0].String()})
		})
	}
}
