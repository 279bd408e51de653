package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"

	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/proc"
)

// jobDashboard is the chart's Grafana dashboard of one TFJob's replicas.
var jobDashboard = filepath.Join("..", "..", "charts", "tfk8s", "files", "tfk8s-job.json")

// prometheusWait bounds the wait for every per-replica query to answer: two scrapes
// of each replica's containers, at promScrapeInterval, and Prometheus's start.
const (
	prometheusWait     = 60 * time.Second
	promScrapeInterval = 2 * time.Second
	// promRateInterval stands for Grafana's $__rate_interval, at least four scrape
	// intervals by its rule: a minute here, as cAdvisor stamps its samples with its own
	// housekeeping time (every 10 to 15 s), so a shorter window holds one sample and
	// rate() none.
	promRateInterval = "1m"
)

// perReplicaPanels are the job dashboard's panels whose queries must return a series
// for each replica on this cluster: the kubelet's cAdvisor is scraped; DCGM exporter
// and kube-state-metrics are not installed, and the steps gauge needs a job that
// writes summaries, so those panels are only evaluated.
var perReplicaPanels = []string{"CPU per replica", "Memory per replica"}

// testPrometheus: a real Prometheus (bin/prometheus, built from its Go module) scrapes
// the cluster's kubelet cAdvisor, with the cluster's token, and the controller, from
// static targets with the scheme, path and honoured labels that the chart's
// ServiceMonitors set; neither prometheus-operator nor the ServiceMonitors themselves
// (their service discovery and relabelling) take part. Each query of the chart's job
// dashboard, its variables set to a running two-worker job, evaluates through
// Prometheus's HTTP API, and the CPU and memory panels return one series for each
// replica's pod (issue 39).
func testPrometheus(ctx context.Context, t *testing.T, c *jobsCluster, controllerMetricsPort int) {
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	prom := filepath.Join(binDir, "prometheus")
	if !fileExists(prom) {
		t.Fatalf("no %s: make test builds it (make tools)", prom)
	}
	c.mustTfk8s(ctx, t, "submit", "--name", "scraped", "--image", jobsImage, "--workers", "2",
		"--", "python3", "-c", "import time; time.sleep(600)")
	defer c.tfk8s(ctx, "delete", "scraped", "--wait")
	if err := c.waitAllRunning(ctx, "scraped", 2, 100*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	start := time.Now()
	api := startPrometheus(ctx, t, prom, c, controllerMetricsPort)
	queries := dashboardQueries(t, map[string]string{"$namespace": "default", "$job": "scraped", "$__rate_interval": promRateInterval})
	want := []string{"scraped-worker-0", "scraped-worker-1"}
	deadline := time.Now().Add(prometheusWait)
	for _, q := range queries {
		for {
			pods, err := promQuery(ctx, api, q.expr)
			if err != nil {
				t.Fatalf("panel %q: query %s: %v", q.panel, q.expr, err)
			}
			if !slices.Contains(perReplicaPanels, q.panel) || slices.Equal(pods, want) {
				t.Logf("panel %q: series for %v", q.panel, pods)
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				logScrapes(ctx, t, api)
				t.Fatalf("panel %q: query %s returned series for pods %v after %v; want %v", q.panel, q.expr, pods, prometheusWait, want)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	t.Logf("Prometheus up and every per-replica panel answered in %.1f s", time.Since(start).Seconds())
}

// panelQuery is one query of a dashboard panel, its variables substituted.
type panelQuery struct{ panel, expr string }

// dashboardQueries reads the job dashboard's queries, with vars substituted as
// Grafana would.
func dashboardQueries(t *testing.T, vars map[string]string) []panelQuery {
	t.Helper()
	data, err := os.ReadFile(jobDashboard)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("parsing %s: %v", jobDashboard, err)
	}
	var out []panelQuery
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			expr := target.Expr
			for name, value := range vars {
				expr = strings.ReplaceAll(expr, name, value)
			}
			out = append(out, panelQuery{p.Title, expr})
		}
	}
	for _, name := range perReplicaPanels {
		if !slices.ContainsFunc(out, func(q panelQuery) bool { return q.panel == name }) {
			t.Fatalf("%s has no panel %q", jobDashboard, name)
		}
	}
	return out
}

// startPrometheus writes Prometheus's configuration, scraping the node's kubelet
// cAdvisor and the controller, starts it until the test ends, and returns its URL.
func startPrometheus(ctx context.Context, t *testing.T, prom string, c *jobsCluster, controllerMetricsPort int) string {
	t.Helper()
	dir := t.TempDir()
	kubelet := kubeletAddress(ctx, t, c)
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken == "" {
		t.Fatalf("%s holds no token for the kubelet to review", c.kubeconfig)
	}
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte(cfg.BearerToken), 0o600); err != nil {
		t.Fatal(err)
	}
	// The kubelet's serving certificate is self-signed, as the chart's ServiceMonitor
	// assumes too.
	config := fmt.Sprintf(`global: {scrape_interval: %s, scrape_timeout: %s}
scrape_configs:
- job_name: kubelet-cadvisor
  scheme: https
  metrics_path: /metrics/cadvisor
  honor_labels: true
  authorization: {credentials_file: %q}
  tls_config: {insecure_skip_verify: true}
  static_configs: [{targets: [%q]}]
- job_name: tfk8s-controller
  honor_labels: true
  static_configs: [{targets: ["127.0.0.1:%d"]}]
`, promScrapeInterval, promScrapeInterval, token, kubelet, controllerMetricsPort)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLocalAddress(t)
	// Started as the other servers are: in a process group of its own, killed by the
	// kernel if the test dies first (Pdeathsig), its output in dir/prometheus.log.
	p, err := proc.Start("prometheus", prom, []string{"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + addr, "--log.level=warn"},
		dir, proc.Options{OwnGroup: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("prometheus's log:\n%s", p.LogTail(100))
		}
	})
	api := "http://" + addr
	c.eventually(ctx, t, "Prometheus to be ready", func() (bool, error) {
		resp, err := http.Get(api + "/-/ready")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return api
}

// kubeletAddress is the kubelet API's address of the cluster's node, as its Node
// object says.
func kubeletAddress(ctx context.Context, t *testing.T, c *jobsCluster) string {
	t.Helper()
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("listing nodes: %d, %v", len(nodes.Items), err)
	}
	n := nodes.Items[0]
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return net.JoinHostPort(a.Address, fmt.Sprint(n.Status.DaemonEndpoints.KubeletEndpoint.Port))
		}
	}
	t.Fatalf("node %s has no InternalIP: %v", n.Name, n.Status.Addresses)
	return ""
}

// freeLocalAddress is a loopback address with a port free a moment ago.
func freeLocalAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// promQuery evaluates expr through Prometheus's HTTP API at the current time, and
// returns the pod label of each series, sorted; an error if Prometheus refuses it.
func promQuery(ctx context.Context, api, expr string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/api/v1/query?"+url.Values{"query": {expr}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("%s: %w", resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s: %s", resp.Status, body.Error)
	}
	var pods []string
	for _, r := range body.Data.Result {
		pods = append(pods, r.Metric["pod"])
	}
	slices.Sort(pods)
	return pods, nil
}

// logScrapes logs what Prometheus scraped, for a failure's diagnosis: each target's
// health and last error, and the pods cAdvisor's working set series name.
func logScrapes(ctx context.Context, t *testing.T, api string) {
	t.Helper()
	for _, u := range []string{api + "/api/v1/targets?state=active",
		api + "/api/v1/query?" + url.Values{"query": {"count by (namespace, pod) (container_memory_working_set_bytes)"}}.Encode()} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			t.Log(err)
			continue
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Logf("%s: %v", u, err)
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		resp.Body.Close()
		t.Logf("%s:\n%s", u, body)
	}
}
