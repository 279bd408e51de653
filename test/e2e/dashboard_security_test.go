package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/vishvananda/netns"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/logline"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// testDashboardCraftedLinks: a confirm page or notebook stop page asked for with a
// name that smuggles another action ("victim/delete#") is 404 with nothing to click,
// and the job is still there; its real confirm page posts to the action it names. A
// browser of its own: the 404s it is led to are expected on its console.
func testDashboardCraftedLinks(ctx context.Context, t *testing.T, c *jobsCluster, base string) {
	bctx := browser.Start(t)
	victim := testutil.MakeTFJob("victim", "default").Workers(1).Suspend(true).Obj()
	if err := c.cl.Create(ctx, victim); err != nil {
		t.Fatal(err)
	}
	defer c.tfk8s(ctx, "delete", "victim")
	for _, path := range []string{
		"/jobs/default/victim%2Fdelete%23/confirm/resume",
		"/workspace/default/notebooks/lab%2Fstop%3Fdelete-home=true%23/confirm-stop",
	} {
		tctx, cancel := context.WithTimeout(bctx, dashboardWait)
		resp, err := chromedp.Run(tctx, chromedp.NavigateResponse(base+path))
		body, _ := browser.Text(tctx, "body")
		cancel()
		if err != nil || resp.Status != http.StatusNotFound || strings.Contains(body, "Resume") || strings.Contains(body, "Stop") {
			t.Errorf("opening %s: %v, status %v, want 404 and nothing to click:\n%s", path, err, resp, body)
		}
	}
	// The browser clicks the crafted page's button if it has one.
	tctx, cancel := context.WithTimeout(bctx, 5*time.Second)
	clickErr := chromedp.Do(tctx, chromedp.Navigate(base+"/jobs/default/victim%2Fdelete%23/confirm/resume"),
		chromedp.Click(chromedp.ID("confirm")))
	cancel()
	if err := c.cl.Get(ctx, client.ObjectKeyFromObject(victim), &tfv1.TFJob{}); err != nil {
		t.Errorf("victim after the crafted confirm page (click: %v): %v", clickErr, err)
	}

	if err := browser.Open(bctx, base+"/jobs/default/victim/confirm/resume", "#confirm"); err != nil {
		t.Fatal(err)
	}
	action, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("form.confirm").getAttribute("action")`))
	if err != nil || action != "/jobs/default/victim/resume" {
		t.Errorf("victim's resume page posts to %q (%v), want /jobs/default/victim/resume", action, err)
	}
	t.Logf("crafted confirm and stop pages: 404, victim kept; its own page posts to %s", action)
}

// dashboardProcess is `tfk8s dashboard` run as its own process, so that its memory
// can be measured.
type dashboardProcess struct {
	cmd  *exec.Cmd
	base string
	port int
}

// startDashboardProcess runs bin/tfk8s dashboard with args until the test ends.
func startDashboardProcess(ctx context.Context, t *testing.T, c *jobsCluster, binDir string, args ...string) *dashboardProcess {
	t.Helper()
	var stderr testutil.SyncBuffer
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "tfk8s"), append([]string{"--kubeconfig", c.kubeconfig, "-n", "default", "dashboard"}, args...)...)
	cmd.Env = append(os.Environ(), "TFK8S_CONFIG="+c.config)
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting tfk8s dashboard (make build?): %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("tfk8s dashboard's stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	m := regexp.MustCompile(`Dashboard: (http://127\.0\.0\.1:(\d+))/`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("tfk8s dashboard printed %q (%v), no URL:\n%s", line, err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	port, _ := strconv.Atoi(m[2])
	return &dashboardProcess{cmd: cmd, base: m[1], port: port}
}

// testDashboardSpoofedHost: the local dashboard refuses to listen beyond loopback; and
// a peer in another network namespace whose packets are forwarded to the dashboard's
// loopback port (a DNAT to 127.0.0.1, as port-forwarding tools set up) gets 403 for a
// resume it sends with Host: localhost, and the job stays suspended.
func testDashboardSpoofedHost(ctx context.Context, t *testing.T, c *jobsCluster, binDir string) {
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "tfk8s"), "--kubeconfig", c.kubeconfig,
		"dashboard", "--address", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--address 0.0.0.0:0: the local dashboard acts with your kubeconfig") {
		t.Errorf("tfk8s dashboard --address 0.0.0.0:0: %v, want a refusal naming --address:\n%s", err, out)
	}

	d := startDashboardProcess(ctx, t, c, binDir)
	target := testutil.MakeTFJob("target", "default").Workers(1).Suspend(true).Obj()
	if err := c.cl.Create(ctx, target); err != nil {
		t.Fatal(err)
	}
	defer c.tfk8s(ctx, "delete", "target")

	name, peer := newOutside(t)
	n, _ := strconv.Atoi(strings.Split(peer, ".")[2])
	veth, hostAddr := fmt.Sprintf("tfko%05d%03d", os.Getpid()%100000, n%1000), fmt.Sprintf("198.19.%d.1", n)
	if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+veth+"/route_localnet", []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	table := fmt.Sprintf("tfk8s_e2e_dash_%d", os.Getpid())
	rules := fmt.Sprintf(`table ip %s {
	chain prerouting {
		type nat hook prerouting priority dstnat;
		iifname "%s" tcp dport %d dnat to 127.0.0.1:%d
	}
}`, table, veth, d.port, d.port)
	nft := exec.CommandContext(ctx, "nft", "-f", "-")
	nft.Stdin = strings.NewReader(rules)
	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("nft -f: %v: %s\n%s", err, out, rules)
	}
	t.Cleanup(func() { _ = exec.Command("nft", "delete", "table", "ip", table).Run() })

	conn := dialIn(t, name, net.JoinHostPort(hostAddr, strconv.Itoa(d.port)))
	defer conn.Close()
	fmt.Fprintf(conn, "POST /jobs/default/target/resume HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost\r\n"+
		"Content-Length: 0\r\nConnection: close\r\n\r\n")
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the peer %s's request: %v", peer, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "peer "+peer) {
		t.Errorf("a resume from %s with Host: localhost: %s %q, want 403 naming the peer", peer, resp.Status, body)
	}
	got := &tfv1.TFJob{}
	if err := c.cl.Get(ctx, client.ObjectKeyFromObject(target), got); err != nil || got.Spec.RunPolicy.Suspend == nil || !*got.Spec.RunPolicy.Suspend {
		t.Errorf("target after the peer's resume: %v, suspend %v", err, got.Spec.RunPolicy.Suspend)
	}
	t.Logf("peer %s through %s:%d with Host: localhost: %s %s", peer, hostAddr, d.port, resp.Status, strings.TrimSpace(string(body)))
}

// dialIn connects to addr from the named network namespace; the connection stays in
// it, so only the dialling needs the thread to enter it.
func dialIn(t *testing.T, name, addr string) net.Conn {
	t.Helper()
	runtime.LockOSThread()
	host, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	conn, dialErr := net.DialTimeout("tcp", addr, 10*time.Second)
	if err := netns.Set(host); err != nil {
		t.Fatalf("leaving network namespace %s: %v", name, err) // the thread stays locked and dies
	}
	runtime.UnlockOSThread()
	if dialErr != nil {
		t.Fatalf("dialling %s from %s: %v", addr, name, dialErr)
	}
	return conn
}

// hugeLineScript prints 300 MiB without a newline, then exits 0.
const hugeLineScript = `import os, sys
os.makedirs("out", exist_ok=True)
chunk = "x" * (1 << 20)
for _ in range(300):
    sys.stdout.write(chunk)
sys.stdout.flush()`

// testDashboardLongLogLine: a job prints one 300 MiB line; the dashboard sends it, as
// a download and as a live stream, in marked pieces of at most 64 KiB, and its peak
// memory grows by less than 100 MiB.
func testDashboardLongLogLine(ctx context.Context, t *testing.T, c *jobsCluster, binDir string) {
	d := startDashboardProcess(ctx, t, c, binDir)
	c.mustTfk8s(ctx, t, "submit", "--name", "huge", "--image", jobsImage, "--workers", "0", "--chief",
		"--artifacts", "out", "--", "python3", "-c", hugeLineScript)
	defer c.tfk8s(ctx, "delete", "huge")
	wait := c.wait
	c.wait = 5 * time.Minute
	job := c.waitFinished(ctx, t, "huge")
	c.wait = wait
	if job.Status.State != tfv1.JobSucceeded {
		c.fail(t, "huge: %s", job.Status.State)
	}

	before := procStatus(t, d.cmd.Process.Pid)
	start := time.Now()
	resp, err := http.Get(d.base + "/jobs/default/huge/logs/download")
	if err != nil {
		t.Fatal(err)
	}
	var total, pieces, longest, marked int
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			total += len(line)
			pieces++
			longest = max(longest, len(line))
			if strings.HasSuffix(strings.TrimSuffix(string(line), "\n"), logline.Mark) {
				marked++
			}
		}
		if err == bufio.ErrBufferFull {
			t.Fatalf("a line of the download is longer than 1 MiB")
		}
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	took := time.Since(start)

	stream, err := http.Get(d.base + "/jobs/default/huge/logs/stream")
	if err != nil {
		t.Fatal(err)
	}
	streamed, _ := io.Copy(io.Discard, stream.Body)
	stream.Body.Close()
	after := procStatus(t, d.cmd.Process.Pid)

	growth := after["VmHWM"] - before["VmRSS"]
	t.Logf("300 MiB line: download %d MiB in %d lines (%d marked, longest %d B) in %v; stream %d MiB; "+
		"dashboard RSS %d MiB before, peak %d MiB after: growth %d MiB",
		total>>20, pieces, marked, longest, took.Round(time.Millisecond), streamed>>20, before["VmRSS"]>>10, after["VmHWM"]>>10, growth>>10)
	// The agent's own notes add a few lines.
	if total < 300<<20 || marked < (300<<20)/logline.Max-10 || longest > logline.Max+len(logline.Mark)+len("[chief-0] \n") {
		t.Errorf("the download: %d bytes in %d lines, %d marked, longest %d; want the 300 MiB line in marked pieces of at most 64 KiB", total, pieces, marked, longest)
	}
	if growth > 100<<10 {
		t.Errorf("the dashboard's peak RSS grew by %d MiB reading one 300 MiB line, want under 100 MiB", growth>>10)
	}
}

// procStatus reads the kB figures of /proc/PID/status (VmRSS, VmHWM, ...).
func procStatus(t *testing.T, pid int) map[string]int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			out[k], _ = strconv.Atoi(f[0])
		}
	}
	return out
}
