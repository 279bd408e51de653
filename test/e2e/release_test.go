package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/localcluster"
)

// The release test's cluster has its own network, apart from the other tests'.
const (
	releaseBridge  = "tfk8se2ec"
	releasePodCIDR = "10.231.0.0/24"
	// releaseVersion is the version the test releases: not the tree's, so that what
	// runs is seen to be the release's; a plain one, as docs/install.md's blocks expect
	// (its wheel is named by the version less its v).
	releaseVersion = "v0.1.1"
	// releaseRepo is the path under the test's registry the release is pushed to.
	releaseRepo = "tfk8s"
	// releasePythonVersion is releaseVersion as the wheels carry it (PEP 440).
	releasePythonVersion = "0.1.1"
)

// wheelTags are the platform tags of the released wheels, by GOOS/GOARCH.
var wheelTags = map[string]string{
	"linux/amd64": "manylinux_2_17_x86_64", "linux/arm64": "manylinux_2_17_aarch64",
	"darwin/amd64": "macosx_11_0_x86_64", "darwin/arm64": "macosx_11_0_arm64",
}

// TestRelease runs make release into a registry the test starts on loopback, checks
// the Python wheels beside the CLI archives and installs this platform's, then
// installs the release into a local cluster with helm install oci://..., the chart's
// defaults naming the release's images, and checks what a team would: a distributed
// job succeeds in the release's Python image with the release's agent, and the
// released CLI's tfk8s version reports the release's version for client and server.
func TestRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(binDir)
	for _, need := range append([]string{"registry", "tfk8s-nodeinit"}, installTools...) {
		if !fileExists(filepath.Join(binDir, need)) {
			t.Fatalf("no %s: make build tools install-tools", filepath.Join(binDir, need))
		}
	}
	registry := startReleaseRegistry(ctx, t, filepath.Join(binDir, "registry")) + "/" + releaseRepo
	out := t.TempDir()
	// The release's downloads, as its release page would serve them: the krew manifest
	// names its archives under this URL.
	downloads := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer downloads.Close()
	releaseURL := downloads.URL + "/" + releaseVersion
	// make release wants releaseVersion's dated section in the changelog; the repository's
	// has none (the version is the test's), so the test gives one of its own.
	changelog := filepath.Join(t.TempDir(), "CHANGELOG.md")
	if err := os.WriteFile(changelog, []byte("# Changelog\n\n## "+releaseVersion+" (the release test)\n\n- Released by TestRelease.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	makeRelease(ctx, t, root, registry, releaseVersion, out, "RELEASE_URL="+releaseURL, "RELEASE_CHANGELOG="+changelog)
	dir := filepath.Join(out, releaseVersion)
	t.Run("the wheels are released, and this platform's installs", func(t *testing.T) {
		checkWheels(ctx, t, dir, releaseVersion, releasePythonVersion)
	})

	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir:   binDir,
		NodeName: "e2e-release-node",
		PodCIDR:  releasePodCIDR,
		Bridge:   releaseBridge,
		Install:  localcluster.InstallHelm,
	}, func() {
		if left := leftNetwork(releaseBridge); len(left) > 0 {
			t.Errorf("left on the host after down: %v", left)
		}
	})
	c := newJobsCluster(t, st.Kubeconfig, opts.UserConfigFile, opts.Dir)
	// The node cannot reach the host's loopback: it pulls every image through the
	// cluster's registry, its mirror, by the image's repository path. Mirror there
	// what the release's pods run, as a cluster's own pull-through mirror would.
	mirrorImages(ctx, t, registry, st.Registry+"/"+releaseRepo, registryAccount(t, opts.Dir),
		"tfk8s-controller:"+releaseVersion, "tfk8s-agent:"+releaseVersion, "python:3.11")

	helm := func(args ...string) string {
		t.Helper()
		args = append(args, "--namespace", localcluster.InstallNamespace, "--kubeconfig", st.Kubeconfig)
		out, err := exec.CommandContext(ctx, filepath.Join(binDir, "helm"), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// local up installed the tree's chart; the release replaces it as a fresh install,
	// by docs/install.md's blocks: the chart, the CLI, the plugin and the SDK.
	helm("uninstall", localcluster.ReleaseName, "--wait", "--timeout", "2m")
	sh := newPageShell(t, binDir, st.Kubeconfig, opts.UserConfigFile)
	runInstallPage(ctx, t, root, sh, map[string]string{"VERSION": releaseVersion, "REGISTRY": registry, "URL": releaseURL})

	t.Run("a distributed job succeeds in the release's images", func(t *testing.T) {
		start := time.Now()
		r := c.tfk8s(ctx, "submit", "../../examples/trainer", "--name", "released", "--image", registry+"/python:3.11",
			"--ps", "1", "--workers", "2", "--chief", "--follow", "--", "python3", "trainer.py", "--steps", "200")
		if r.code != 0 {
			c.fail(t, "submit --follow released: %s", r)
		}
		if job := c.job(ctx, t, "released"); job.Status.State != tfv1.JobSucceeded {
			c.fail(t, "released state %s, want Succeeded: %+v", job.Status.State, job.Status.Conditions)
		}
		t.Logf("released (1 PS, 2 workers, chief) succeeded %.1f s after submit", time.Since(start).Seconds())
	})
	t.Run("a job runs through the CLI and the plugin installed as docs/install.md says", func(t *testing.T) {
		start := time.Now()
		out := runInstalledJob(ctx, t, sh, registry+"/python:3.11")
		if job := c.job(ctx, t, "installed"); job.Status.State != tfv1.JobSucceeded {
			c.fail(t, "installed state %s, want Succeeded: %+v\n%s", job.Status.State, job.Status.Conditions, out)
		}
		t.Logf("the installed CLI's job succeeded in %.1f s:\n%s", time.Since(start).Seconds(), lastLines(out, 10))
	})
	t.Run("the released CLI reports the release's version for client and server", func(t *testing.T) {
		cli := extractCLI(t, filepath.Join(dir, "tfk8s_"+releaseVersion+"_linux_amd64.tar.gz"))
		out, err := exec.CommandContext(ctx, cli, "--kubeconfig", st.Kubeconfig, "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("tfk8s version: %v\n%s", err, out)
		}
		var got struct {
			Client               struct{ Version string }
			Server               *struct{ Version, Image string }
			ServerError, Warning string
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("tfk8s version -o json printed %s: %v", out, err)
		}
		wantImage := registry + "/tfk8s-controller:" + releaseVersion
		if got.Client.Version != releaseVersion || got.Server == nil || got.Server.Version != releaseVersion ||
			got.Server.Image != wantImage || got.Warning != "" {
			t.Errorf("tfk8s version -o json:\n%s\nwant client and server %s, image %s, no warning", out, releaseVersion, wantImage)
		}
		t.Logf("tfk8s version -o json:\n%s", out)
	})
}

// startReleaseRegistry starts bin/registry on a free loopback port, storing in a
// temporary directory, stopped when the test ends; it returns its host:port.
func startReleaseRegistry(ctx context.Context, t *testing.T, bin string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(config, fmt.Appendf(nil, "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n",
		filepath.Join(dir, "data"), addr), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", config)
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("the release registry's log:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("the registry on %s does not answer: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// makeRelease runs make release of version to registry, writing under out, with vars
// (NAME=value) given to make besides, and logs its time, its summary and the size of
// the release's files. The CUDA image is left out (RELEASE_GPU_IMAGE empty): its 4 GB
// would add minutes and disk to every test release; hack/release's
// TestReleaseReference checks where it goes.
func makeRelease(ctx context.Context, t *testing.T, root, registry, version, out string, vars ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "make", append([]string{"--no-print-directory", "release", "VERSION=" + version, "REGISTRY=" + registry,
		"RELEASE_PLAIN_HTTP=1", "RELEASE_GPU_IMAGE=", "RELEASE_OUT=" + out}, vars...)...)
	cmd.Dir = root
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, lastLines(string(output), 60))
	}
	summary := string(output)
	if i := strings.Index(summary, "\nrelease "+version+", to "); i >= 0 {
		summary = summary[i+1:]
	}
	t.Logf("make release VERSION=%s REGISTRY=%s: %.1f s\n%s", version, registry, time.Since(start).Seconds(), summary)
	dir := filepath.Join(out, version)
	for _, want := range []string{"SHA256SUMS", "tfk8s.yaml", "tfk8s-" + strings.TrimPrefix(version, "v") + ".tgz",
		"tfk8s_" + version + "_darwin_arm64.tar.gz", "tfk8s_" + version + "_linux_amd64.tar.gz"} {
		if !fileExists(filepath.Join(dir, want)) {
			t.Errorf("make release wrote no %s", filepath.Join(dir, want))
		}
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// mirrorImages copies each image (name:tag) from the repository path from to the
// repository path to, as toAuth, every platform with it.
func mirrorImages(ctx context.Context, t *testing.T, from, to string, toAuth authn.Authenticator, images ...string) {
	t.Helper()
	for _, image := range images {
		src, err := name.ParseReference(from+"/"+image, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := name.ParseReference(to+"/"+image, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(src, remote.WithContext(ctx))
		if err != nil {
			t.Fatalf("reading %s: %v", src, err)
		}
		if err := remote.WriteIndex(dst, idx, remote.WithContext(ctx), remote.WithAuth(toAuth)); err != nil {
			t.Fatalf("mirroring %s to %s: %v", src, dst, err)
		}
	}
}

// extractCLI unpacks the tfk8s binary of a release archive and returns its path.
func extractCLI(t *testing.T, archive string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != "tfk8s" {
		t.Fatalf("%s: first entry %v, %v; want tfk8s", archive, hdr, err)
	}
	bin := filepath.Join(t.TempDir(), "tfk8s")
	data, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// checkWheels checks the release's Python wheels in dir: one a platform, each listed
// in SHA256SUMS with its SHA-256; and the wheel of this machine's platform installs
// into a new venv, where tfk8s imports with the release's version and its Client runs
// the binary the wheel carries, stamped with the release's version.
func checkWheels(ctx context.Context, t *testing.T, dir, version, pyVersion string) {
	sums := readSHA256SUMS(t, filepath.Join(dir, "SHA256SUMS"))
	for platform, tag := range wheelTags {
		wheel := "tfk8s-" + pyVersion + "-py3-none-" + tag + ".whl"
		data, err := os.ReadFile(filepath.Join(dir, wheel))
		if err != nil {
			t.Errorf("the %s wheel: %v", platform, err)
			continue
		}
		if got, want := sums[wheel], fmt.Sprintf("%x", sha256.Sum256(data)); got != want {
			t.Errorf("SHA256SUMS says %q for %s, want %s", got, wheel, want)
		}
		t.Logf("%s: %.1f MB", wheel, float64(len(data))/1e6)
	}
	tag, ok := wheelTags[runtime.GOOS+"/"+runtime.GOARCH]
	if !ok {
		t.Fatalf("no wheel is released for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	tmp := t.TempDir()
	venv, kubeconfig := filepath.Join(tmp, "venv"), filepath.Join(tmp, "kubeconfig")
	// No cluster: tfk8s version reports the server as unknown, at once.
	if err := os.WriteFile(kubeconfig, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append(sdkEnviron(), "KUBECONFIG="+kubeconfig, "PIP_DISABLE_PIP_VERSION_CHECK=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	start := time.Now()
	run("python3", "-m", "venv", venv)
	run(filepath.Join(venv, "bin", "pip"), "install", "--no-index", "--no-deps", filepath.Join(dir, "tfk8s-"+pyVersion+"-py3-none-"+tag+".whl"))
	out := run(filepath.Join(venv, "bin", "python"), "-c", `import json, subprocess, sys, tfk8s
c = tfk8s.Client()
cli = subprocess.run([c.binary, "version", "-o", "json"], capture_output=True, text=True, check=True)
print(json.dumps({"version": tfk8s.__version__, "binary": c.binary, "cli": json.loads(cli.stdout)["client"]["version"]}))`)
	t.Logf("the %s wheel installed and imported in %.1f s: %s", tag, time.Since(start).Seconds(), out)
	var got struct{ Version, Binary, CLI string }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("the import printed %q: %v", out, err)
	}
	if got.Version != pyVersion || got.CLI != version || !strings.HasPrefix(got.Binary, venv+"/") {
		t.Errorf("installed: tfk8s %s running %s (version %s); want tfk8s %s running its own binary in %s, version %s",
			got.Version, got.Binary, got.CLI, pyVersion, venv, version)
	}
}

// readSHA256SUMS reads a release's SHA256SUMS: file name to hex SHA-256.
func readSHA256SUMS(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for line := range strings.Lines(string(data)) {
		sum, name, ok := strings.Cut(strings.TrimSpace(line), "  ")
		if !ok {
			t.Fatalf("%s: line %q is not \"<sha256>  <name>\"", path, line)
		}
		sums[name] = sum
	}
	return sums
}
