package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/tfk8s/tfk8s/internal/pack"
)

// pip runs from its wheel with the image's own python3, in a copy of the root file
// system: nothing but debootstrap and chroot is needed on this machine, and the wheels
// are the ones for the image's Python (3.11, glibc 2.36, x86_64).
const (
	pipWheel  = "pip-25.3-py3-none-any.whl"
	pipURL    = "https://files.pythonhosted.org/packages/44/3c/d717024885424591d5376220b5e836c2d5293ce2011523c9de23ff7bf068/" + pipWheel
	pipSHA256 = "9655943313a94722b7774661c21049070f6bbb0a1516bf02f7c8d5d9201514cd"
)

// sitePackages is where the packages go: on the sys.path of Debian's python3.
const sitePackages = "usr/local/lib/python3.11/dist-packages"

// pipPaths are the directories pipInstall works with.
type pipPaths struct {
	root         string // the python image's root file system, left as it is
	work         string // scratch: the copy of root pip runs in
	wheels       string // the wheels, kept between runs
	pip          string // pip's wheel
	requirements string // requirements.txt
	stage        string // the result: usr/local/... of the layer
	// layers are unpacked over the copy before pip runs: the layers below this one,
	// which the check imports from.
	layers []string
	// target is where pip installs in the copy, site-packages when empty.
	target string
	// check is the Python program run once the packages are installed, with
	// PYTHONPATH=target, to prove they import.
	check string
	// data says that the share/ and etc/ pip writes beside the packages (JupyterLab's
	// static files and server settings) go to usr/local/share and usr/local/etc.
	data bool
}

// site is where pip installs in the copy.
func (p pipPaths) site() string {
	if p.target == "" {
		return "/" + sitePackages
	}
	return p.target
}

// pipInstall installs the requirements into p.stage: pip downloads the wheels it does
// not have yet into p.wheels, installs them with --require-hashes, the bytecode is
// compiled, and p.check is run, all in a copy of the root.
func pipInstall(p pipPaths) (err error) {
	if err := fetchPip(p.pip); err != nil {
		return err
	}
	for _, dir := range []string{p.work, p.stage} {
		if err := removeTree(dir); err != nil {
			return err
		}
	}
	// A copy by hard links costs nothing; every file pip and the checks write is new,
	// and what this step changes in it is replaced, never written through.
	if err := run("cp", "-al", p.root, p.work); err != nil {
		return fmt.Errorf("copying the root file system: %w", err)
	}
	defer func() {
		if rmErr := removeTree(p.work); err == nil {
			err = rmErr
		}
	}()
	if err := prepareWork(p); err != nil {
		return err
	}
	for _, l := range p.layers {
		if err := run("tar", "-xzf", l, "-C", p.work); err != nil {
			return fmt.Errorf("unpacking %s into pip's root: %w", filepath.Base(l), err)
		}
	}
	// The wheel cache moves into the copy and back, whatever happens.
	wheelsIn := filepath.Join(p.work, "tmp/wheels")
	if err := os.MkdirAll(p.wheels, 0o755); err != nil {
		return err
	}
	if err := os.Rename(p.wheels, wheelsIn); err != nil {
		return fmt.Errorf("moving the wheel cache: %w", err)
	}
	defer func() {
		if mvErr := os.Rename(wheelsIn, p.wheels); err == nil && mvErr != nil {
			err = fmt.Errorf("moving the wheel cache back: %w", mvErr)
		}
	}()
	if err := runPip(p.work, p.site(), p.check); err != nil {
		return err
	}
	return stageInstall(p)
}

// prepareWork puts pip, the requirements, device nodes and this machine's resolver and
// CA certificates (a proxy's CA among them) into the copy.
func prepareWork(p pipPaths) error {
	for _, c := range []struct{ from, to string }{
		{p.pip, "tmp/" + pipWheel},
		{p.requirements, "tmp/requirements.txt"},
		{"/etc/resolv.conf", "etc/resolv.conf"},
		{"/etc/ssl/certs/ca-certificates.crt", "tmp/ca-certificates.crt"},
	} {
		if err := copyFile(c.from, filepath.Join(p.work, c.to)); err != nil {
			return fmt.Errorf("preparing pip's root: %w", err)
		}
	}
	// compileall -j 0 takes its semaphores in /dev/shm.
	if err := os.MkdirAll(filepath.Join(p.work, "dev/shm"), 0o1777); err != nil {
		return err
	}
	for _, dev := range []string{"null", "zero", "random", "urandom"} {
		if err := run("cp", "-a", "/dev/"+dev, filepath.Join(p.work, "dev", dev)); err != nil {
			return fmt.Errorf("preparing pip's root: %w", err)
		}
	}
	return nil
}

// runPip downloads, installs and compiles the packages in work, into site, then runs check.
func runPip(work, site, check string) error {
	pip := []string{"python3", "/tmp/" + pipWheel + "/pip"}
	common := []string{"--require-hashes", "--only-binary=:all:", "--no-deps", "--disable-pip-version-check",
		"--cert", "/tmp/ca-certificates.crt", "-r", "/tmp/requirements.txt"}
	env := proxyEnv()
	if err := chroot(work, env, append(append(pip, "download", "-q", "--dest", "/tmp/wheels"), common...)...); err != nil {
		return fmt.Errorf("downloading the wheels: %w", err)
	}
	install := append(pip, "install", "-q", "--root-user-action=ignore", "--no-index", "--find-links", "/tmp/wheels", "--no-compile",
		"--no-warn-script-location", "--target", site)
	if err := chroot(work, env, append(install, common...)...); err != nil {
		return fmt.Errorf("installing the wheels: %w", err)
	}
	// Bytecode checked by hash: the layer fixes every file's time.
	compile := exec.Command("chroot", work, "python3", "-m", "compileall", "-q", "-f", "-j", "0",
		"--invalidation-mode", "unchecked-hash", site)
	if out, err := compile.CombinedOutput(); err != nil {
		// Some packages ship files that are not Python 3 (templates, tests): not fatal.
		fmt.Printf("tensorflow-image: compileall: %v (%d bytes of output, the first: %.300s)\n", err, len(out), out)
	}
	if err := chroot(work, []string{"TF_CPP_MIN_LOG_LEVEL=2", "PYTHONPATH=" + site}, "python3", "-c", check); err != nil {
		return fmt.Errorf("importing the packages in the image: %w", err)
	}
	return nil
}

// stageInstall moves what pip installed out of the copy into p.stage, its scripts into
// /usr/local/bin (and with p.data, its share/ and etc/ into /usr/local).
func stageInstall(p pipPaths) error {
	site := filepath.Join(p.stage, sitePackages)
	if err := os.MkdirAll(filepath.Dir(site), 0o755); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(p.work, p.site()), site); err != nil {
		return fmt.Errorf("staging the packages: %w", err)
	}
	dirs := []string{"bin"}
	if p.data {
		dirs = append(dirs, "share", "etc")
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(site, d)); err == nil {
			if err := os.Rename(filepath.Join(site, d), filepath.Join(p.stage, "usr/local", d)); err != nil {
				return fmt.Errorf("staging %s: %w", d, err)
			}
		}
	}
	return nil
}

// proxyEnv passes this machine's proxy settings to pip.
func proxyEnv() []string {
	var env []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// fetchPip downloads pip's wheel to path unless it is there, checking its SHA-256.
func fetchPip(path string) error {
	if sum, err := pack.FileSHA256(path); err == nil && sum == pipSHA256 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	resp, err := http.Get(pipURL)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", pipURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("downloading %s: %s", pipURL, resp.Status)
	}
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(path + ".tmp")
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("downloading %s: %w", pipURL, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != pipSHA256 {
		return fmt.Errorf("downloading %s: SHA-256 %s, want %s", pipURL, sum, pipSHA256)
	}
	return os.Rename(path+".tmp", path)
}

// copyFile copies a file, replacing (not writing through) what is at to: in the copy of
// the root, to may be a hard link to the image's own file.
func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.Remove(to); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}
