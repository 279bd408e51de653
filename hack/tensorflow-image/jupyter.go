package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tfk8s/tfk8s/internal/images"
)

// jupyterVersion is the way the JupyterLab layer is made: change it when that changes,
// so that the layer's key changes.
const jupyterVersion = "1"

// The Jupyter image runs as an ordinary user, jovyan (the name Jupyter's own images
// use), whose home is where a notebook's claim is mounted.
const (
	jupyterUID  = 1000
	jupyterGID  = 100 // Debian's "users"
	jupyterHome = "/home/jovyan"
)

// jupyterLayer is the layer of JupyterLab's packages (beside TensorFlow's, which they
// share some of), the jovyan user and its home, built when not cached.
func (b builder) jupyterLayer(tf *layerFile) (*layerFile, error) {
	p := b.pipPaths(b.o.jupyterRequirements)
	p.layers = []string{tf.Path}
	p.target = "/tmp/jupyter-site"
	p.check = "import jupyterlab, jupyter_server, ipykernel, matplotlib; " +
		"print('jupyterlab', jupyterlab.__version__, 'jupyter_server', jupyter_server.__version__, 'ipykernel', ipykernel.__version__, " +
		"'matplotlib', matplotlib.__version__)"
	p.data = true
	return b.pipLayer("jupyter", b.jupyterKey, p, func(stage string) error { return addUser(p.root, stage) })
}

// addUser writes into stage the root's /etc/passwd and /etc/group with jovyan added,
// and jovyan's home, owned by jovyan: Python and Jupyter look the user up by its id.
func addUser(root, stage string) error {
	for _, f := range []struct{ name, line string }{
		{"etc/passwd", fmt.Sprintf("jovyan:x:%d:%d:Jupyter:%s:/bin/bash\n", jupyterUID, jupyterGID, jupyterHome)},
		{"etc/group", ""},
	} {
		data, err := os.ReadFile(filepath.Join(root, f.name))
		if err != nil {
			return fmt.Errorf("adding the user jovyan: %w", err)
		}
		if err := os.MkdirAll(filepath.Join(stage, "etc"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(stage, f.name), append(data, f.line...), 0o644); err != nil {
			return fmt.Errorf("adding the user jovyan: %w", err)
		}
	}
	home := filepath.Join(stage, jupyterHome)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	return os.Chown(home, jupyterUID, jupyterGID)
}

// cliLayer is the layer of the tfk8s CLI, /usr/local/bin/tfk8s, and of the Python SDK
// that runs it: small, and the only one a change of either makes again. key hashes
// the binary and the SDK's files.
func (b builder) cliLayer(key string) (*layerFile, error) {
	path := filepath.Join(b.o.cache, "layers", "cli-"+key[:16]+".tar.gz")
	if l := readLayer(path); l != nil {
		fmt.Printf("tensorflow-image: cli layer cached: %s\n", l.Sum)
		return l, nil
	}
	stage := filepath.Join(b.o.cache, "cli-stage")
	var l *layerFile
	err := b.step("cli layer", func() (n int64, err error) {
		if err := removeTree(stage); err != nil {
			return 0, err
		}
		bin := filepath.Join(stage, "usr/local/bin/tfk8s")
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return 0, err
		}
		if err := run("cp", filepath.Join(b.o.cache, "cli", "tfk8s"), bin); err != nil {
			return 0, fmt.Errorf("staging the CLI: %w", err)
		}
		if err := os.Chmod(bin, 0o755); err != nil {
			return 0, err
		}
		if err := stageSDK(b.o.sdk, stage); err != nil {
			return 0, err
		}
		l, err = b.layer(stage, path)
		return size(l), err
	})
	if err == nil {
		err = removeTree(stage)
	}
	return l, err
}

// buildCLI builds pkg (./cmd/tfk8s) for linux/amd64, static, to out, linked with
// ldflags too: the same bytes for the same sources and stamp, so that its hash says
// when the CLI layer must be made again.
func buildCLI(pkg, ldflags, out string) (string, error) {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", strings.TrimSpace("-s -w "+ldflags), "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the CLI %s: %w: %s", pkg, err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// jupyterSpec describes the Jupyter image: TensorFlow's, JupyterLab, the CLI and the
// Python SDK, run as jovyan in its home.
func jupyterSpec(base, tf, jupyter, cli *layerFile) imageSpec {
	return imageSpec{ref: images.Jupyter, title: "jupyter",
		description: "Debian " + suite + " (minbase), python3, tensorflow-cpu 2.21.0, JupyterLab, the tfk8s CLI and its Python SDK",
		layers:      []*layerFile{base, tf, jupyter, cli},
		user:        fmt.Sprintf("%d:%d", jupyterUID, jupyterGID),
		workDir:     jupyterHome,
		env:         []string{"HOME=" + jupyterHome, "USER=jovyan", "SHELL=/bin/bash"},
		cmd:         []string{"jupyter", "lab", "--ip=0.0.0.0", "--port=8888", "--no-browser"},
	}
}
