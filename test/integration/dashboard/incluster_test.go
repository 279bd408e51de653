package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// userWithRole creates a ServiceAccount in ns that may read and change the tfjobs,
// and read the pods, logs, events and Secrets of ns only, and returns a token of it.
func userWithRole(t *testing.T, ns, name string) string {
	return userWithRules(t, ns, name, true)
}

// userWithRules is userWithRole, with or without the reading of Secrets.
func userWithRules(t *testing.T, ns, name string, secrets bool) string {
	t.Helper()
	ctx := context.Background()
	readable := []string{"pods", "pods/log"}
	if secrets {
		readable = append(readable, "secrets")
	}
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"tfk8s.io"}, Resources: []string{"tfjobs"}, Verbs: []string{"get", "list", "watch", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: readable, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"list"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}},
	}
	for _, obj := range objs {
		if err := k8sClient.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, name, err)
		}
	}
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a token of %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// signIn signs in through the form and waits for the jobs list.
func signIn(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("jobs")))
	if err != nil {
		t.Fatalf("signing in: %v", err)
	}
}

// status opens url and returns the HTTP status of the page and its text.
func status(t *testing.T, ctx context.Context, url string) (int64, string) {
	t.Helper()
	// A page that never finishes loading (a log stream that was let through) fails
	// here rather than hanging the test.
	tctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	resp, err := chromedp.Run(tctx, chromedp.NavigateResponse(url))
	if err != nil {
		t.Errorf("opening %s: %v", url, err)
		return 0, ""
	}
	text, err := browser.Text(tctx, "body")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Status, text
}

// TestInClusterUsersSeeOnlyTheirNamespaces: in-cluster, two users sign in with their
// own tokens; each sees the jobs of their namespace, and the other's list, job page,
// logs page and log stream answer 403 and show nothing of it.
func TestInClusterUsersSeeOnlyTheirNamespaces(t *testing.T) {
	nsA, nsB := testutil.Namespace(t, k8sClient), testutil.Namespace(t, k8sClient)
	jobA := testutil.MakeTFJob("job-of-a", nsA).Workers(1).Obj()
	jobB := testutil.MakeTFJob("job-of-b", nsB).Workers(1).Obj()
	jobB.Spec.TFReplicaSpecs["Worker"].Template.Spec.Containers[0].Image = "registry.b/private-model:7"
	createJob(t, jobA)
	createJob(t, jobB)
	alice, bob := userWithRole(t, nsA, "alice"), userWithRole(t, nsB, "bob")
	base, audit := startDashboard(t, "default", "--in-cluster")

	// The session cookie: HttpOnly, Secure, SameSite=Strict, and not the token.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := postSignIn(noRedirect, base, alice)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := resp.Cookies(); len(c) != 1 || !c[0].HttpOnly || !c[0].Secure || c[0].SameSite != http.SameSiteStrictMode || strings.Contains(c[0].Value, alice[:20]) {
		t.Errorf("sign-in set cookies %v, want one HttpOnly, Secure, SameSite=Strict session id", c)
	}
	resp, err = postSignIn(noRedirect, base, "not-a-token")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("a bad token got %s and cookies %v, want 401 and none", resp.Status, resp.Cookies())
	}

	ctxA, ctxB := browser.Start(t), browser.Start(t)
	signIn(t, ctxA, base, alice)
	signIn(t, ctxB, base, bob)
	for _, tc := range []struct {
		ctx        context.Context
		user, ns   string
		own, other string
		otherNS    string
	}{
		{ctxA, "alice", nsA, "job-of-a", "job-of-b", nsB},
		{ctxB, "bob", nsB, "job-of-b", "job-of-a", nsA},
	} {
		if code, text := status(t, tc.ctx, base+"/jobs?namespace="+tc.ns); code != http.StatusOK || !strings.Contains(text, tc.own) {
			t.Errorf("%s's own list: %d %q, want 200 with %s", tc.user, code, text, tc.own)
		}
		if user, _ := browser.Text(tc.ctx, "#user"); user != "system:serviceaccount:"+tc.ns+":"+tc.user {
			t.Errorf("signed in as %q, want %s", user, tc.user)
		}
		for _, path := range []string{
			"/jobs?namespace=" + tc.otherNS,
			"/jobs/table?namespace=" + tc.otherNS,
			"/jobs/" + tc.otherNS + "/" + tc.other,
			"/jobs/" + tc.otherNS + "/" + tc.other + "/status",
			"/jobs/" + tc.otherNS + "/" + tc.other + "/logs",
			"/jobs/" + tc.otherNS + "/" + tc.other + "/logs/stream",
			"/jobs/" + tc.otherNS + "/" + tc.other + "/logs/download",
		} {
			code, text := status(t, tc.ctx, base+path)
			if code != http.StatusForbidden || !strings.Contains(text, "forbidden") {
				t.Errorf("%s GET %s: %d %q, want 403 forbidden", tc.user, path, code, text)
			}
			for _, secret := range []string{"registry.b/private-model", "Worker", "replicas"} {
				if strings.Contains(text, secret) {
					t.Errorf("%s GET %s shows %q of the other namespace: %q", tc.user, path, secret, text)
				}
			}
		}
	}
	if !strings.Contains(audit.String(), `action=signin result=ok`) || !strings.Contains(audit.String(), "system:serviceaccount:"+nsB+":bob") {
		t.Errorf("the audit log lacks the sign-ins:\n%s", audit.String())
	}
}

// TestInClusterLogsNeedTheStorageSecret: in-cluster, the logs in S3 are read with the
// job's storage Secret as the user reads it, never with S3 settings of the
// dashboard's own: a user who may read the job but not its Secret sees no log.
func TestInClusterLogsNeedTheStorageSecret(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	srv := finishedJobWithStoredLogs(t, testutil.MakeTFJob("stored", ns).Workers(1).Obj(), "a line only the Secret's readers see\n")
	carol, dave := userWithRules(t, ns, "carol", false), userWithRules(t, ns, "dave", true)
	base, _ := startDashboardWithEnv(t, "default", srv.Env(), "--in-cluster", "--allowed-s3-endpoint", srv.Endpoint)

	for _, tc := range []struct {
		user, token string
		status      string
		log         string
	}{
		{"carol", carol, "secrets \"s3-credentials\" is forbidden", ""},
		{"dave", dave, "End of the log", "[worker-0] a line only the Secret's readers see"},
	} {
		ctx := browser.Start(t)
		signIn(t, ctx, base, tc.token)
		if err := browser.Open(ctx, base+"/jobs/"+ns+"/stored/logs", "#log"); err != nil {
			t.Fatal(err)
		}
		if status, err := browser.WaitText(ctx, "#log-status", tc.status, wait); err != nil {
			t.Errorf("%s: %v (status %q)", tc.user, err, status)
		}
		if text, err := browser.Text(ctx, "#log"); err != nil || text != tc.log {
			t.Errorf("%s sees the log %q (%v), want %q", tc.user, text, err, tc.log)
		}
	}
}

// postSignIn posts the sign-in form as a browser's page of the dashboard does, with
// Sec-Fetch-Site: the dashboard refuses a POST that carries neither it nor Origin.
func postSignIn(c *http.Client, base, token string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return c.Do(req)
}
