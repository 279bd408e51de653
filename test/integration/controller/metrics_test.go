package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// metricValue reads a counter or the sample count of a histogram from the registry the
// in-process controllers report to, for the series whose namespace label is ns (or any
// series, with ns empty).
func metricValue(t *testing.T, name, ns string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	if ns == "" {
		return scrape(byName).sum(name, nil)
	}
	return scrape(byName).sum(name, map[string]string{"namespace": ns})
}

// scrape is what the controller's metrics endpoint served once, by metric family.
type scrape map[string]*dto.MetricFamily

// getScrape reads the metrics endpoint at url.
func getScrape(t *testing.T, url string) scrape {
	t.Helper()
	s, err := tryScrape(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tryScrape(url string) (scrape, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing the scrape of %s: %w", url, err)
	}
	return families, nil
}

// sum adds up the series of family name whose labels include want: a counter's or a
// gauge's value, a histogram's sample count.
func (s scrape) sum(name string, want map[string]string) float64 {
	var n float64
	for _, m := range s[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match {
			n += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return n
}

// names are the names of every series served, with a histogram's _bucket, _sum and
// _count.
func (s scrape) names() map[string]bool {
	out := map[string]bool{}
	for name, f := range s {
		out[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY {
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		}
	}
	return out
}

// startControllerServingMetrics runs the controller, its jobs gauge by namespace, with
// its metrics served over HTTP and its logs to logger (the suite's log when zero), and
// returns the endpoint's URL. With kubeflow it reconciles kubeflow.org TFJobs too.
func startControllerServingMetrics(t *testing.T, logger logr.Logger, kubeflow bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	mgr, err := controller.NewManager(cp.Config, controller.ManagerOptions{
		Options:                controller.Options{RetryBackoff: 200 * time.Millisecond, Kubeflow: kubeflow},
		MetricsBindAddress:     addr,
		HealthProbeBindAddress: "0",
		SkipNameValidation:     true,
		JobMetricsByNamespace:  true,
		Logger:                 logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	testutil.RunManager(t, mgr)
	return "http://" + addr + "/metrics"
}

// TestMetricsFollowAJob scrapes the controller's metrics endpoint while a job of two
// workers is bound, runs, has a worker killed (137, re-created under ExitCode) and
// succeeds, and another job fails, and checks that every series an operator watches moved: the jobs gauge by
// state, reconcile latency, pods created and their creation latency, the work queue,
// restarts by reason, gang wait, and the process's memory. Then it checks that the
// Grafana dashboard queries only series that scrape served.
func TestMetricsFollowAJob(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	url := startControllerServingMetrics(t, logr.Logger{}, false)
	var before scrape
	testutil.Eventually(t, "the metrics endpoint to serve", func(context.Context) (bool, error) {
		var err error
		if before, err = tryScrape(url); err != nil {
			return false, nil // not listening yet
		}
		return before["controller_runtime_active_workers"] != nil, nil
	})
	ctx := context.Background()
	job := testutil.MakeTFJob("metered", ns).Workers(2).RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyExitCode).Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	all := []string{"metered-worker-0", "metered-worker-1"}
	waitPods(t, ns, "metered", all...)
	runPods(t, ns, all...)
	waitCondition(t, ns, "metered", tfv1.JobRunning)
	waitJobsGauge(t, url, ns, map[string]float64{"Running": 1})

	first := waitPods(t, ns, "metered", all...)["metered-worker-1"].UID
	kubelet.SetExited(t, ns, "metered-worker-1", 137)
	waitReplaced(t, ns, "metered", "metered-worker-1", first)
	runPods(t, ns, "metered-worker-1")
	for _, name := range all {
		kubelet.SetExited(t, ns, name, 0)
	}
	waitCondition(t, ns, "metered", tfv1.JobSucceeded)

	// A job whose only worker exits 1 under Never fails.
	doomed := testutil.MakeTFJob("doomed", ns).Workers(1).RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyNever).Obj()
	if err := k8sClient.Create(ctx, doomed); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "doomed", "doomed-worker-0")
	runPods(t, ns, "doomed-worker-0")
	kubelet.SetExited(t, ns, "doomed-worker-0", 1)
	waitCondition(t, ns, "doomed", tfv1.JobFailed)
	waitJobsGauge(t, url, ns, map[string]float64{"Succeeded": 1, "Failed": 1})

	after := getScrape(t, url)
	moved := []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"controller_runtime_reconcile_time_seconds", map[string]string{"controller": "tfjob"}, 1},
		{"tfk8s_pods_created_total", nil, 3},
		{"tfk8s_pod_create_duration_seconds", nil, 3},
		{"tfk8s_replica_restarts_total", map[string]string{"reason": "Error"}, 1},
		{"tfk8s_gang_wait_seconds", map[string]string{"gang": "none"}, 1},
		{"tfk8s_job_startup_seconds", nil, 1},
		{"tfk8s_jobs_succeeded_total", map[string]string{"namespace": ns}, 1},
		{"tfk8s_jobs_failed_total", map[string]string{"namespace": ns}, 1},
		{"workqueue_adds_total", map[string]string{"name": "tfjob"}, 1},
	}
	for _, m := range moved {
		if got := after.sum(m.name, m.labels) - before.sum(m.name, m.labels); got < m.min {
			t.Errorf("%s%v moved by %v while the job ran, want at least %v", m.name, m.labels, got, m.min)
		}
	}
	for _, name := range []string{"workqueue_depth", "process_resident_memory_bytes", "process_cpu_seconds_total"} {
		if after[name] == nil {
			t.Errorf("%s not served", name)
		}
	}
	t.Run("the Grafana dashboard queries only served series", func(t *testing.T) {
		checkDashboard(t, after.names())
	})
}

// runPods binds pods to a node and marks them Running, as the scheduler and the
// kubelet would.
func runPods(t *testing.T, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		kubelet.Bind(t, ns, name, "node-1")
	}
	kubelet.SetRunning(t, ns, names...)
}

// waitJobsGauge waits until tfk8s_jobs counts the jobs of namespace ns by state as
// want does, and no others.
func waitJobsGauge(t *testing.T, url, ns string, want map[string]float64) {
	t.Helper()
	waitJobsGaugeOf(t, url, map[string]string{"namespace": ns}, want)
}

// waitJobsGaugeOf waits until tfk8s_jobs counts the jobs of the series labelled with
// labels by state as want does, and no others.
func waitJobsGaugeOf(t *testing.T, url string, labels map[string]string, want map[string]float64) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("tfk8s_jobs%v to count %v", labels, want), func(context.Context) (bool, error) {
		s := getScrape(t, url)
		var total float64
		for state, n := range want {
			if s.sum("tfk8s_jobs", withLabel(labels, "state", state)) != n {
				return false, nil
			}
			total += n
		}
		return s.sum("tfk8s_jobs", labels) == total, nil
	})
}

// withLabel is labels and name=value.
func withLabel(labels map[string]string, name, value string) map[string]string {
	out := maps.Clone(labels)
	out[name] = value
	return out
}

// dashboardFile is the Grafana dashboard the chart ships.
var dashboardFile = filepath.Join("..", "..", "..", "config", "grafana", "tfk8s-controller.json")

// checkDashboard checks that every panel of the Grafana dashboard has a query, and
// that each query names only series in served.
func checkDashboard(t *testing.T, served map[string]bool) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("parsing %s: %v", dashboardFile, err)
	}
	queried := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			names := promQLMetricNames(target.Expr)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no metric", p.Title, target.Expr)
			}
			for _, name := range names {
				queried[name] = true
				if !served[name] {
					t.Errorf("panel %q: query %q names %s, which the controller does not serve", p.Title, target.Expr, name)
				}
			}
		}
	}
	for _, v := range dash.Templating.List {
		q, _ := v.Query.(string)
		if m := labelValuesOf.FindStringSubmatch(q); m != nil {
			queried[m[1]] = true
			if !served[m[1]] {
				t.Errorf("variable %q: query %q names %s, which the controller does not serve", v.Name, q, m[1])
			}
		}
	}
	t.Logf("the dashboard queries %d series: %s", len(queried), strings.Join(sortedKeys(queried), ", "))
}

var (
	// promQLNotNames are what a query holds beside metric names: label matchers,
	// ranges, grouping clauses, strings, and numbers.
	promQLNotNames = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]|\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|"[^"]*"|\b\d+(\.\d+)?([eE][-+]?\d+)?\b`)
	promQLWord     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	// labelValuesOf finds the metric of a Grafana variable's label_values(metric, label).
	labelValuesOf  = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	promQLKeywords = map[string]bool{"and": true, "or": true, "unless": true, "offset": true, "bool": true}
)

// promQLMetricNames returns the metric names in a PromQL expression: the identifiers
// that are neither functions (followed by a parenthesis) nor keywords, once label
// matchers, ranges and grouping clauses are cut out.
func promQLMetricNames(expr string) []string {
	var names []string
	for _, w := range promQLWord.FindAllString(promQLNotNames.ReplaceAllString(expr, " "), -1) {
		if strings.HasSuffix(w, "(") || promQLKeywords[strings.TrimSpace(w)] {
			continue
		}
		names = append(names, strings.TrimSpace(w))
	}
	return names
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestPromQLMetricNames pins the names the dashboard check finds in a query.
func TestPromQLMetricNames(t *testing.T) {
	cases := map[string][]string{
		`sum by (state) (tfk8s_jobs{namespace=~"$namespace"})`:                                                                                 {"tfk8s_jobs"},
		`histogram_quantile(0.99, sum by (le) (rate(controller_runtime_reconcile_time_seconds_bucket{controller="tfjob"}[$__rate_interval])))`: {"controller_runtime_reconcile_time_seconds_bucket"},
		`rate(process_cpu_seconds_total[5m]) / on (instance) go_goroutines`:                                                                    {"process_cpu_seconds_total", "go_goroutines"},
		`sum(rate(tfk8s_pods_created_total[1m])) * 60`:                                                                                         {"tfk8s_pods_created_total"},
	}
	for expr, want := range cases {
		if got := promQLMetricNames(expr); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("promQLMetricNames(%q) = %v, want %v", expr, got, want)
		}
	}
}

// TestLogLinesNameTheirJob runs a job through creation, a restart and success with the
// controller logging at V(2), and checks that every line that speaks of something in
// the job's namespace carries the job as a key (TFJob: {name, namespace}; the event
// recorder's lines: object and kind TFJob), so that an operator can filter a job's
// lines.
func TestLogLinesNameTheirJob(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	var logs testutil.SyncBuffer
	startControllerServingMetrics(t, zap.New(zap.WriteTo(&logs), zap.Level(zapcore.Level(-2))), false)
	ctx := context.Background()
	job := testutil.MakeTFJob("logged", ns).Workers(1).RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyExitCode).Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	first := waitPods(t, ns, "logged", "logged-worker-0")["logged-worker-0"].UID
	runPods(t, ns, "logged-worker-0")
	kubelet.SetExited(t, ns, "logged-worker-0", 137)
	waitReplaced(t, ns, "logged", "logged-worker-0", first)
	runPods(t, ns, "logged-worker-0")
	kubelet.SetExited(t, ns, "logged-worker-0", 0)
	waitCondition(t, ns, "logged", tfv1.JobSucceeded)

	var about int
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if !strings.Contains(line, ns) {
			continue
		}
		about++
		type object struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		}
		var entry struct {
			TFJob object `json:"TFJob"`
			// The event recorder's lines name the object an event is about.
			Object object `json:"object"`
			Kind   string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if entry.Kind == "TFJob" {
			entry.TFJob = entry.Object
		}
		if entry.TFJob != (object{"logged", ns}) {
			t.Errorf("log line %q does not carry the job as TFJob {name, namespace}", line)
		}
	}
	if about == 0 {
		t.Fatal("no log line speaks of the job's namespace")
	}
	t.Logf("%d log lines speak of the job, each with its key", about)
}

// TestMetricsCountKubeflowJobs: with --kubeflow, the jobs gauge and the per-job
// counters count kubeflow.org TFJobs beside tfk8s.io ones, each under its group label.
func TestMetricsCountKubeflowJobs(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	if err := cp.InstallKubeflowCRD(context.Background()); err != nil {
		t.Fatal(err)
	}
	url := startControllerServingMetrics(t, logr.Logger{}, true)
	ctx := context.Background()
	if err := k8sClient.Create(ctx, testutil.MakeTFJob("own", ns).Workers(1).Obj()); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Create(ctx, makeKubeflowJob(ns, "kf", 1, 1)); err != nil {
		t.Fatal(err)
	}
	kfPods := []string{"kf-chief-0", "kf-ps-0", "kf-worker-0"}
	waitPods(t, ns, "own", "own-worker-0")
	waitPods(t, ns, "kf", kfPods...)
	runPods(t, ns, append(kfPods, "own-worker-0")...)
	waitJobsGaugeOf(t, url, map[string]string{"namespace": ns, "group": "tfk8s.io"}, map[string]float64{"Running": 1})
	waitJobsGaugeOf(t, url, map[string]string{"namespace": ns, "group": "kubeflow.org"}, map[string]float64{"Running": 1})
	s := getScrape(t, url)
	for _, group := range []string{"tfk8s.io", "kubeflow.org"} {
		if got := s.sum("tfk8s_jobs_created_total", map[string]string{"namespace": ns, "group": group}); got != 1 {
			t.Errorf("tfk8s_jobs_created_total{group=%q} = %v, want 1", group, got)
		}
	}
}
