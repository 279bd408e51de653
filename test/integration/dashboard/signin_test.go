package dashboard

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestSignInFailuresHoldBackOnlyTheirUser: with the API server reviewing real
// tokens, one client (every test client shares 127.0.0.1, as clients behind an
// ingress share its address) failing as one user until it is refused leaves another
// user free to sign in, again and again; /metrics answers that user and nobody
// without a session.
func TestSignInFailuresHoldBackOnlyTheirUser(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	alice := userWithRole(t, ns, "alice")
	base, _ := startDashboardWithEnv(t, "default", nil, "--in-cluster")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(token string) *http.Response {
		t.Helper()
		resp, err := postSignIn(noRedirect, base, token)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}

	enc := base64.RawURLEncoding.EncodeToString
	forged := enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(`{"sub":"system:serviceaccount:`+ns+`:mallory"}`)) + ".c2ln"
	var codes []int
	for range 6 {
		codes = append(codes, post(forged).StatusCode)
	}
	if want := "[401 401 401 401 401 429]"; fmt.Sprint(codes) != want {
		t.Fatalf("a forged token claiming mallory got %v, want %s", codes, want)
	}
	var session *http.Cookie
	for i := range 8 {
		resp := post(alice)
		if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
			t.Fatalf("alice's sign-in %d from the same address got %s, want 303 with a session", i+1, resp.Status)
		}
		session = resp.Cookies()[0]
	}

	get := func(c *http.Cookie) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
		if c != nil {
			req.AddCookie(c)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(nil); code != http.StatusUnauthorized || strings.Contains(body, "tfk8s_dashboard_requests_total") {
		t.Errorf("/metrics without a session: %d %q, want 401 and no metric", code, body)
	}
	want := `tfk8s_dashboard_requests_total{code="429",route="POST /signin"} 1`
	if code, body := get(session); code != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("/metrics with alice's session: %d, want 200 with %s:\n%s", code, want, body)
	}
}
