package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/cli"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// The notebook's cluster has its own network, apart from the other suites'.
const (
	notebookBridge  = "tfk8se2e5"
	notebookPodCIDR = "10.241.0.0/24"
	// notebookWait bounds the wait for JupyterLab (the image is pulled and unpacked
	// first) and for the job a cell submits.
	notebookWait = 5 * time.Minute
)

// notebookURL matches what tfk8s notebook open prints.
var notebookURL = regexp.MustCompile(`Notebook default/notebook: (http://127\.0\.0\.1:\d+)/lab\?token=([0-9a-f]+)`)

// TestNotebook starts a notebook in a local cluster of its own, opens it through the
// API server, and, through JupyterLab's REST API and a kernel's websocket, runs a cell
// that writes a program and submits it with !tfk8s submit: the job succeeds, as the
// notebook's ServiceAccount, with the namespace's S3 settings; a second cell does the
// same with the image's Python SDK, and examples/notebooks/mnist.ipynb runs there end
// to end under nbclient. Without the token, JupyterLab refuses.
func TestNotebook(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	if !fileExists(filepath.Join(binDir, "..", "_out", "images", "jupyter", "index.json")) {
		t.Fatalf("no Jupyter image in %s/../_out/images: make tensorflow-image", binDir)
	}
	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir: binDir, NodeName: "e2e-notebook-node", PodCIDR: notebookPodCIDR, Bridge: notebookBridge,
	}, func() {
		if left := leftNetwork(notebookBridge); len(left) > 0 {
			t.Errorf("left on the host after down: %v", left)
		}
	})
	c := newJobsCluster(t, st.Kubeconfig, opts.UserConfigFile, opts.Dir)
	c.wait = notebookWait

	start := time.Now()
	c.mustTfk8s(ctx, t, "notebook", "start", "--size", "1Gi")
	jupyter, closeNotebook := openNotebook(ctx, t, c)
	t.Logf("notebook start → open printed its URL: %.1f s", time.Since(start).Seconds())
	if r := c.mustTfk8s(ctx, t, "notebook", "list"); !regexp.MustCompile(`(?m)^notebook\s+Running\s`).MatchString(r.stdout) {
		t.Errorf("notebook list: %s", r)
	}
	if code := jupyter.status(ctx, t, "/api/kernels", false); code != http.StatusForbidden {
		t.Errorf("GET /api/kernels without the token: %d, want 403", code)
	}
	if code := jupyter.status(ctx, t, "/api/kernels", true); code != http.StatusOK {
		t.Errorf("GET /api/kernels with the token: %d, want 200", code)
	}
	t.Run("the notebook's account stays inside its rights", func(t *testing.T) { testNotebookPolicy(ctx, t, c) })
	t.Run("another notebook reaches neither its home nor another's job", func(t *testing.T) { testNotebookTenants(ctx, t, c) })
	t.Run("a pod labelled as the notebook's gets no forward", func(t *testing.T) { testNotebookLures(ctx, t, c) })
	t.Run("a rewritten run record is shown, not submitted", func(t *testing.T) { testFromRunRecord(ctx, t, c) })
	kernel := jupyter.startKernel(ctx, t)
	start = time.Now()
	out := jupyter.execute(ctx, t, kernel, `import pathlib
d = pathlib.Path("hello"); d.mkdir(exist_ok=True)
(d / "hello.py").write_text("print('hello from a notebook job')\n")
!tfk8s submit hello --name fromnb --image `+images.Python+` --workers 1 -- python3 hello.py
!tfk8s list`)
	t.Logf("the cell ran in %.1f s; it printed:\n%s", time.Since(start).Seconds(), out)
	if !regexp.MustCompile(`(?m)^fromnb\s`).MatchString(out) {
		t.Fatalf("tfk8s list in the cell does not show fromnb:\n%s", out)
	}
	job := c.waitFinished(ctx, t, "fromnb")
	t.Logf("the cell's job %s %.1f s after the cell started", job.Status.State, time.Since(start).Seconds())
	logs := c.tfk8s(ctx, "logs", "fromnb")
	if job.Status.State != tfv1.JobSucceeded || !strings.Contains(logs.stdout, "hello from a notebook job") {
		c.fail(t, "fromnb %s, want Succeeded with its greeting; logs: %s", job.Status.State, logs)
	}
	// Its pods read the notebook's S3 Secret: the notebook's account may touch none.
	if s := job.Spec.Storage; s == nil || s.SecretRef.Name != "notebook-s3" {
		t.Errorf("fromnb reads its S3 settings from %+v, want the notebook's Secret notebook-s3", s)
	}

	// The image's Python SDK does the same, in-cluster, as the notebook's account.
	start = time.Now()
	out = jupyter.execute(ctx, t, kernel, `import tfk8s
c = tfk8s.Client()
c.submit("hello", name="fromsdk", image="`+images.Python+`", workers=1, command=["python3", "hello.py"])
job = c.wait_for_job_status("fromsdk", timeout=`+strconv.Itoa(int((notebookWait-time.Minute).Seconds()))+`)
print("sdk", job.name, job.state, job.manifest["spec"]["storage"]["secretRef"]["name"])
print("\n".join(line.text for line in c.get_job_logs("fromsdk")))`)
	t.Logf("the SDK's cell ran in %.1f s; it printed:\n%s", time.Since(start).Seconds(), out)
	if !strings.Contains(out, "sdk fromsdk Succeeded notebook-s3") || !strings.Contains(out, "hello from a notebook job") {
		c.fail(t, "the SDK's cell did not submit, wait for and read fromsdk:\n%s", out)
	}
	t.Run("the example notebook runs in the notebook", func(t *testing.T) { testExampleNotebook(ctx, t, c, jupyter, kernel) })

	// Stopped and started again, the notebook has the files of its home claim.
	closeNotebook()
	c.mustTfk8s(ctx, t, "notebook", "stop")
	if r := c.mustTfk8s(ctx, t, "notebook", "list"); !regexp.MustCompile(`(?m)^notebook\s+Stopped\s`).MatchString(r.stdout) {
		t.Errorf("notebook list after stop: %s", r)
	}
	start = time.Now()
	c.mustTfk8s(ctx, t, "notebook", "start")
	jupyter, closeNotebook = openNotebook(ctx, t, c)
	t.Logf("notebook started again, image cached → open printed its URL: %.1f s", time.Since(start).Seconds())
	if code := jupyter.status(ctx, t, "/api/contents/hello/hello.py", true); code != http.StatusOK {
		t.Errorf("GET /api/contents/hello/hello.py after a restart: %d, want 200: the home claim lost the cell's file", code)
	}
	closeNotebook()
	c.mustTfk8s(ctx, t, "notebook", "stop", "--delete-home")
}

// openNotebook runs tfk8s notebook open, waits for the URL it prints, and returns a
// client of that URL and a function that ends the command (also run when the test
// ends).
func openNotebook(ctx context.Context, t *testing.T, c *jobsCluster) (*jupyterClient, func()) {
	t.Helper()
	var stdout, stderr testutil.SyncBuffer
	env := cli.Env{
		IOStreams:  genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr},
		Getenv:     func(string) string { return "" },
		ConfigFile: c.config,
	}
	openCtx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(openCtx, []string{"--kubeconfig", c.kubeconfig, "-n", "default", "notebook", "open", "--timeout", notebookWait.String()}, env)
	}()
	var once sync.Once
	closeOpen := func() {
		once.Do(func() {
			stop()
			if code := <-done; code != 0 {
				t.Errorf("notebook open ended with %d: %s", code, stderr.String())
			}
		})
	}
	t.Cleanup(closeOpen)
	deadline := time.Now().Add(notebookWait + 30*time.Second)
	for time.Now().Before(deadline) {
		if m := notebookURL.FindStringSubmatch(stdout.String()); m != nil {
			return &jupyterClient{base: m[1], token: m[2]}, closeOpen
		}
		select {
		case code := <-done:
			done <- code
			c.fail(t, "notebook open ended with %d before printing a URL:\n%s\n%s", code, stdout.String(), stderr.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	c.fail(t, "notebook open printed no URL in %v:\n%s\n%s", notebookWait, stdout.String(), stderr.String())
	return nil, nil
}

// jupyterClient speaks JupyterLab's REST API and kernel protocol at base.
type jupyterClient struct {
	base, token string
}

// status is the HTTP status of GET path, with the token or without.
func (j *jupyterClient) status(ctx context.Context, t *testing.T, path string, withToken bool) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if withToken {
		req.Header.Set("Authorization", "token "+j.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// startKernel starts a Python kernel and returns its id.
func (j *jupyterClient) startKernel(ctx context.Context, t *testing.T) string {
	t.Helper()
	resp := j.do(ctx, t, http.MethodPost, "/api/kernels", []byte(`{"name": "python3"}`))
	var kernel struct {
		ID string `json:"id"`
	}
	if resp.code != http.StatusCreated || json.Unmarshal(resp.body, &kernel) != nil || kernel.ID == "" {
		t.Fatalf("POST /api/kernels: %d: %s", resp.code, resp.body)
	}
	return kernel.ID
}

// kernelMessage is a message of Jupyter's kernel protocol, as the server's websocket
// carries it (JSON, with the channel named).
type kernelMessage struct {
	Header       map[string]any `json:"header"`
	ParentHeader map[string]any `json:"parent_header"`
	Metadata     map[string]any `json:"metadata"`
	Content      map[string]any `json:"content"`
	Channel      string         `json:"channel"`
}

// execute runs code in the kernel and returns what it printed (streams and errors),
// failing the test when the cell fails.
func (j *jupyterClient) execute(ctx context.Context, t *testing.T, kernel, code string) string {
	t.Helper()
	u, _ := url.Parse(j.base)
	u.Scheme, u.Path = "ws", "/api/kernels/"+kernel+"/channels"
	ws, resp, err := websocket.DefaultDialer.DialContext(ctx, u.String(), http.Header{"Authorization": {"token " + j.token}})
	if err != nil {
		t.Fatalf("opening the kernel's channels: %v (%v)", err, resp)
	}
	defer ws.Close()
	id := randomID()
	msg := kernelMessage{
		Header: map[string]any{"msg_id": id, "username": "e2e", "session": randomID(), "msg_type": "execute_request",
			"version": "5.3", "date": time.Now().UTC().Format(time.RFC3339)},
		ParentHeader: map[string]any{}, Metadata: map[string]any{}, Channel: "shell",
		Content: map[string]any{"code": code, "silent": false, "store_history": true, "user_expressions": map[string]any{},
			"allow_stdin": false, "stop_on_error": true},
	}
	if err := ws.WriteJSON(msg); err != nil {
		t.Fatalf("sending execute_request: %v", err)
	}
	var out strings.Builder
	_ = ws.SetReadDeadline(time.Now().Add(notebookWait))
	for {
		var m kernelMessage
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("reading the kernel's replies: %v; output so far:\n%s", err, out.String())
		}
		if m.ParentHeader["msg_id"] != id {
			continue
		}
		switch m.Header["msg_type"] {
		case "stream":
			fmt.Fprint(&out, m.Content["text"])
		case "error":
			fmt.Fprintf(&out, "%v: %v\n%v\n", m.Content["ename"], m.Content["evalue"], m.Content["traceback"])
		case "execute_reply":
			if m.Content["status"] != "ok" {
				t.Fatalf("the cell ended %v:\n%s", m.Content["status"], out.String())
			}
			return out.String()
		}
	}
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
