package bench

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// What the benchmark reads of the API server: its request counts and CPU profile.

// requestCounts reads kube-apiserver's count of write requests so far, by resource and
// verb ("pods create", "tfjobs/status patch").
func (r *rig) requestCounts() map[string]float64 {
	resp, err := r.hc.Get(r.cfg.Host + "/metrics")
	if err != nil {
		r.b.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		r.b.Fatal(err)
	}
	out := map[string]float64{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		switch labels["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "create", "update", "patch", "delete":
		default:
			continue
		}
		key := labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		out[key+" "+strings.ToLower(labels["verb"])] += m.GetCounter().GetValue()
	}
	return out
}

// requestDelta lists the counts that grew, largest first.
func requestDelta(before, after map[string]float64) string {
	type count struct {
		key string
		n   float64
	}
	var grew []count
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			grew = append(grew, count{k, d})
		}
	}
	slices.SortFunc(grew, func(a, b count) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.key, b.key)) })
	var parts []string
	for _, c := range grew {
		parts = append(parts, fmt.Sprintf("%s %.0f", c.key, c.n))
	}
	return strings.Join(parts, ", ")
}

// profileAPIServer, when TFK8S_BENCH_PPROF names a directory, records CPU profiles of
// kube-apiserver and of the controller (if it serves them) from now for
// TFK8S_BENCH_PPROF_SECONDS (default 5), into <dir>/<scenario>.pprof and
// <dir>/<scenario>-controller.pprof, for `go tool pprof`. The returned function waits
// for them.
func profileAPIServer(b *testing.B, cfg *rest.Config, ctl *controllerProcess, scenario string) func() {
	dir := os.Getenv("TFK8S_BENCH_PPROF")
	if dir == "" {
		return func() {}
	}
	query := "/debug/pprof/profile?seconds=" + cmp.Or(os.Getenv("TFK8S_BENCH_PPROF_SECONDS"), "5")
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	fetch := func(hc *http.Client, url, out string) {
		defer wg.Done()
		resp, err := hc.Get(url)
		for i := 0; err != nil && i < 100; i++ { // a controller just started may not listen yet
			time.Sleep(10 * time.Millisecond)
			resp, err = hc.Get(url)
		}
		if err != nil {
			b.Logf("profiling: %v", err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, out))
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			f.Close()
		}
		if err != nil {
			b.Logf("profiling: %v", err)
		}
	}
	wg.Add(1)
	go fetch(hc, cfg.Host+query, scenario+".pprof")
	if ctl != nil && ctl.pprofAddr != "" {
		wg.Add(1)
		go fetch(http.DefaultClient, "http://"+ctl.pprofAddr+query, scenario+"-controller.pprof")
	}
	return wg.Wait
}
