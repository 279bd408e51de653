package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/version"
)

// dashboardSelector selects the pods of the chart's dashboard Deployment.
const dashboardSelector = "app.kubernetes.io/name=tfk8s,app.kubernetes.io/component=dashboard"

// checkInstalledDashboard turns the chart's dashboard on (helm upgrade --reuse-values
// --set dashboard.enabled=true), reaches its pod through the API server's port-forward,
// and signs in from Chromium with the token of a ServiceAccount bound only to one
// namespace: its job shows, the other namespace's list and job page answer 403.
func checkInstalledDashboard(ctx context.Context, t *testing.T, c *jobsCluster, opts localcluster.Options) {
	helmEnableDashboard(ctx, t, c, opts)
	pod := waitDashboardPod(ctx, t, c)
	nsA, nsB := dashboardNamespace(ctx, t, c, "dash-a"), dashboardNamespace(ctx, t, c, "dash-b")
	for ns, name := range map[string]string{nsA: "job-of-a", nsB: "job-of-b"} {
		// Suspended: the job is what the user looks at, no pod needs to run.
		if err := c.cl.Create(ctx, testutil.MakeTFJob(name, ns).Workers(1).Suspend(true).Obj()); err != nil {
			t.Fatalf("creating tfjob %s/%s: %v", ns, name, err)
		}
	}
	token := namespaceUser(ctx, t, c, nsA, "alice")
	base := forwardDashboard(t, c, pod)
	bctx := browser.Start(t)

	err := chromedp.Do(bctx,
		chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("jobs")))
	if err != nil {
		t.Fatalf("signing in with alice's token: %v", err)
	}
	if err := browser.Open(bctx, base+"/jobs?namespace="+nsA, `tr.job[data-name="job-of-a"]`); err != nil {
		t.Errorf("alice does not see job-of-a in %s: %v", nsA, err)
	}
	for _, path := range []string{"/jobs?namespace=" + nsB, "/jobs/" + nsB + "/job-of-b"} {
		tctx, cancel := context.WithTimeout(bctx, dashboardWait)
		resp, err := chromedp.Run(tctx, chromedp.NavigateResponse(base+path))
		text, _ := browser.Text(tctx, "body")
		cancel()
		if err != nil || resp.Status != http.StatusForbidden {
			t.Errorf("alice opening %s: %v, status %v, want 403:\n%s", path, err, resp, text)
		}
	}
	t.Logf("in-cluster dashboard (pod %s): alice signed in, sees %s, gets 403 for %s", pod, nsA, nsB)
}

// helmEnableDashboard upgrades the release with the dashboard on, its image the one up
// pushed to the cluster's registry.
func helmEnableDashboard(ctx context.Context, t *testing.T, c *jobsCluster, opts localcluster.Options) {
	t.Helper()
	helm, chart := filepath.Join(opts.BinDir, "helm"), filepath.Join(opts.BinDir, "..", "charts", "tfk8s")
	out, err := exec.CommandContext(ctx, helm, "upgrade", localcluster.ReleaseName, chart,
		"--namespace", localcluster.InstallNamespace, "--kubeconfig", c.kubeconfig, "--reuse-values",
		"--set", "dashboard.enabled=true",
		"--set", "dashboard.image.repository="+version.Repository+"/tfk8s-dashboard",
		"--set", "dashboard.image.tag="+version.Version).CombinedOutput()
	if err != nil {
		t.Fatalf("helm upgrade --set dashboard.enabled=true: %v\n%s", err, out)
	}
}

// waitDashboardPod waits until the dashboard's pod is ready and returns its name.
func waitDashboardPod(ctx context.Context, t *testing.T, c *jobsCluster) string {
	t.Helper()
	var name string
	c.eventually(ctx, t, "the dashboard's pod ready", func() (bool, error) {
		list, err := c.cs.CoreV1().Pods(localcluster.InstallNamespace).List(ctx, metav1.ListOptions{LabelSelector: dashboardSelector})
		if err != nil {
			return false, err
		}
		for _, p := range list.Items {
			ready := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			})
			if p.DeletionTimestamp == nil && ready {
				name = p.Name
				return true, nil
			}
		}
		return false, fmt.Errorf("%d dashboard pods, none ready", len(list.Items))
	})
	return name
}

// dashboardNamespace creates a namespace, deleted when the test ends.
func dashboardNamespace(ctx context.Context, t *testing.T, c *jobsCluster, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.cl.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.cl.Delete(context.Background(), ns) })
	return name
}

// namespaceUser creates a ServiceAccount bound to a Role that may read and change the
// tfjobs and read the pods, logs and events of ns only, and returns a token of it.
func namespaceUser(ctx context.Context, t *testing.T, c *jobsCluster, ns, name string) string {
	t.Helper()
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"tfk8s.io"}, Resources: []string{"tfjobs"}, Verbs: []string{"get", "list", "watch", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"list"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}},
	}
	for _, obj := range objs {
		if err := c.cl.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s/%s: %v", obj, ns, name, err)
		}
	}
	tr, err := c.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a token of %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// forwardDashboard forwards a free port of 127.0.0.1 to the dashboard pod's port 8686
// through the API server, as kubectl port-forward does, until the test ends; it
// returns the dashboard's URL there. The browser keeps the dashboard's Secure cookie
// on http://127.0.0.1, a secure context.
func forwardDashboard(t *testing.T, c *jobsCluster, pod string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(localcluster.InstallNamespace).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: rt}, http.MethodPost, url)
	stop, ready := make(chan struct{}), make(chan struct{})
	var errOut testutil.SyncBuffer
	pf, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{"0:8686"}, stop, ready, io.Discard, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- pf.ForwardPorts() }()
	t.Cleanup(func() { close(stop); <-ended })
	select {
	case <-ready:
	case err := <-ended:
		ended <- err
		t.Fatalf("forwarding to %s:8686: %v\n%s", pod, err, errOut.String())
	case <-time.After(time.Minute):
		t.Fatalf("forwarding to %s:8686: not ready within a minute\n%s", pod, errOut.String())
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) == 0 {
		t.Fatalf("forwarding to %s:8686: no local port: %v", pod, err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", ports[0].Local)
}
