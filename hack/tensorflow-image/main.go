// Command tensorflow-image builds the images tfk8s runs Python programs in, without
// Docker: make tensorflow-image runs it.
//
//	go run ./hack/tensorflow-image --out _out/images [--cache DIR] [--mirror URL]
//
// It writes three OCI layouts, each the linux/amd64 image in an image index whose
// index.json names the full reference:
//
//   - OUT/python/: ghcr.io/tfk8s/python:3.11, one layer: Debian bookworm minbase with
//     python3 (also as python), made by debootstrap from the Debian mirror this
//     machine's apt uses (debootstrap is installed with apt-get when absent);
//   - OUT/tensorflow/: ghcr.io/tfk8s/tensorflow:2.21.0-cpu, that layer and one more:
//     requirements.txt (tensorflow-cpu 2.21.0, tf-keras, tensorboard and every package
//     they require, pinned by hash) installed by pip into /usr/local/lib/python3.11/dist-packages;
//   - OUT/jupyter/: ghcr.io/tfk8s/jupyter:2.21.0-cpu, those two layers, one of
//     jupyter-requirements.txt (JupyterLab 4, pinned by hash) with the user jovyan (uid
//     1000, the image's user) and its home /home/jovyan, and one of the tfk8s CLI
//     (./cmd/tfk8s, static) at /usr/local/bin/tfk8s and its Python SDK
//     (python/src/tfk8s, import tfk8s), so that a change of either makes only that
//     small layer again.
//
// With --gpu it writes OUT/tensorflow-gpu/ alone (gpu.go): ghcr.io/tfk8s/tensorflow:2.21.0-gpu,
// the python layer, a layer per nvidia-*-cu12 package of gpu-requirements.txt and one
// of TensorFlow built with CUDA; make tensorflow-gpu-image runs that.
//
// It needs root (debootstrap and chroot), Debian's mirror and PyPI. Downloads (.debs,
// wheels), the root file system and the layers are kept in the cache directory
// ($XDG_CACHE_HOME/tfk8s/tensorflow-image, else ~/.cache/tfk8s/tensorflow-image), so
// that a fresh clone on the same machine builds in seconds; when the layouts hold the
// key of the current inputs, nothing is done.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/pack"
)

// version is the build's own version: change it when the way the images are made
// changes, so that the key changes.
const version = "2"

func main() {
	if err := build(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tensorflow-image:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	out, cache, mirror, requirements string
	jupyterRequirements, cli         string
	cliLdflags, sdk                  string
	gpu                              bool
	gpuRequirements                  string
}

func build(args []string) error {
	fs := flag.NewFlagSet("tensorflow-image", flag.ExitOnError)
	var o options
	fs.StringVar(&o.out, "out", "_out/images", "directory the OCI layouts python/, tensorflow/ and jupyter/ are written under")
	fs.StringVar(&o.cache, "cache", defaultCache(), "directory of the downloads, root file system and layers kept between runs")
	fs.StringVar(&o.mirror, "mirror", "", "Debian mirror (default: the one this machine's apt uses)")
	fs.StringVar(&o.requirements, "requirements", "hack/tensorflow-image/requirements.txt", "the pinned Python packages")
	fs.StringVar(&o.jupyterRequirements, "jupyter-requirements", "hack/tensorflow-image/jupyter-requirements.txt",
		"the pinned Python packages JupyterLab adds")
	fs.StringVar(&o.cli, "cli", "./cmd/tfk8s", "the Go package of the tfk8s CLI the Jupyter image holds")
	fs.StringVar(&o.cliLdflags, "cli-ldflags", "", "linker flags of the CLI besides -s -w: its version stamp (make passes the images')")
	fs.StringVar(&o.sdk, "sdk", "python/src/tfk8s", "the Python SDK's package, which the Jupyter image holds beside the CLI")
	fs.BoolVar(&o.gpu, "gpu", false, "build only OUT/tensorflow-gpu/, the CUDA image, instead of the other three")
	fs.StringVar(&o.gpuRequirements, "gpu-requirements", "hack/tensorflow-image/gpu-requirements.txt",
		"the pinned Python packages of the CUDA image")
	_ = fs.Parse(args)
	if o.mirror == "" {
		o.mirror = aptMirror()
	}
	var err error
	if o.cache, err = filepath.Abs(o.cache); err != nil {
		return err
	}
	if o.gpu {
		return buildGPU(o)
	}
	cliBuild := startCLI(o)
	k, err := inputKeys(o)
	if err != nil {
		return err
	}
	pyDir, tfDir, jDir := filepath.Join(o.out, "python"), filepath.Join(o.out, "tensorflow"), filepath.Join(o.out, "jupyter")
	if layoutKey(pyDir) == k.tf && layoutKey(tfDir) == k.tf {
		if err := cliBuild.addTo(&k); err != nil {
			return err
		}
		if layoutKey(jDir) == k.jupyter {
			fmt.Printf("tensorflow-image: up to date (key %s)\n", k.jupyter[:16])
			return nil
		}
	}
	start := time.Now()
	b := builder{o: o, rootKey: k.root[:16], key: k.tf[:16], jupyterKey: k.jupyterLayer[:16]}
	base, err := b.pythonLayer()
	if err != nil {
		return err
	}
	tf, err := b.tensorFlowLayer(base)
	if err != nil {
		return err
	}
	jupyter, err := b.jupyterLayer(tf)
	if err != nil {
		return err
	}
	if err := cliBuild.addTo(&k); err != nil {
		return err
	}
	cli, err := b.cliLayer(k.cliLayer)
	if err != nil {
		return err
	}
	for _, w := range []struct {
		dir, key string
		spec     imageSpec
	}{{pyDir, k.tf, pythonSpec(base)}, {tfDir, k.tf, tensorFlowSpec(base, tf)}, {jDir, k.jupyter, jupyterSpec(base, tf, jupyter, cli)}} {
		if err := b.step("write "+w.dir, func() (int64, error) { return writeImage(w.dir, w.spec, w.key) }); err != nil {
			return err
		}
	}
	fmt.Printf("tensorflow-image: built %s, %s and %s in %v (key %s)\n", images.Python, images.TensorFlow, images.Jupyter,
		time.Since(start).Round(100*time.Millisecond), k.jupyter[:16])
	return nil
}

// keys are the hashes of the inputs of each layer and image.
type keys struct {
	root, tf          string // the python layer; the python and tensorflow images
	jupyterLayer      string // the JupyterLab layer
	jupyter, cliLayer string // the jupyter image; the CLI and the Python SDK, which it includes
	sdk               string // the Python SDK
}

// cliBuild is the go build of the CLI the Jupyter image holds. It runs beside
// debootstrap and pip, which mostly wait on the network: a cold build of the CLI took
// minutes before debootstrap could start.
type cliBuild struct {
	done chan struct{}
	sum  string // the binary's SHA-256
	err  error
}

// startCLI starts building the CLI (Go's build cache makes that quick when nothing
// changed).
func startCLI(o options) *cliBuild {
	c := &cliBuild{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		bin, err := buildCLI(o.cli, o.cliLdflags, filepath.Join(o.cache, "cli", "tfk8s"))
		if err == nil {
			if c.sum, err = pack.FileSHA256(bin); err != nil {
				err = fmt.Errorf("hashing the CLI: %w", err)
			}
		}
		c.err = err
	}()
	return c
}

// addTo waits for the CLI and adds its hash to k: the Jupyter image's key.
func (c *cliBuild) addTo(k *keys) error {
	<-c.done
	if c.err != nil {
		return c.err
	}
	k.cliLayer = hashOf(c.sum, k.sdk)
	k.jupyter = hashOf(k.jupyterLayer, k.cliLayer)
	return nil
}

// inputKeys reads the requirements to hash what each layer is made of; the CLI's part
// of the Jupyter image's key comes from its build (cliBuild.addTo).
func inputKeys(o options) (keys, error) {
	req, err := os.ReadFile(o.requirements)
	if err != nil {
		return keys{}, fmt.Errorf("reading --requirements: %w", err)
	}
	jreq, err := os.ReadFile(o.jupyterRequirements)
	if err != nil {
		return keys{}, fmt.Errorf("reading --jupyter-requirements: %w", err)
	}
	var k keys
	if k.sdk, err = sdkSum(o.sdk); err != nil {
		return keys{}, err
	}
	k.root = hashOf("tensorflow-image", version, suite, strings.Join(packages, ","), strings.Join(junk, ","))
	k.tf = hashOf(k.root, pipWheel, string(req))
	k.jupyterLayer = hashOf(k.tf, jupyterVersion, string(jreq))
	return k, nil
}

// builder makes the layers, each once per key, in the cache.
type builder struct {
	o                        options
	rootKey, key, jupyterKey string
}

// pythonLayer is the layer of the Debian root file system, built when not cached.
func (b builder) pythonLayer() (*layerFile, error) {
	root := filepath.Join(b.o.cache, "root-"+b.rootKey)
	path := filepath.Join(b.o.cache, "layers", "python-"+b.rootKey+".tar.gz")
	if l := readLayer(path); l != nil && exists(root) {
		fmt.Printf("tensorflow-image: python layer cached: %s\n", l.Sum)
		return l, nil
	}
	tmp := root + ".tmp"
	steps := []struct {
		name string
		fn   func() (int64, error)
	}{
		{"debootstrap " + suite + " from " + b.o.mirror, func() (int64, error) {
			err := debootstrap(tmp, filepath.Join(b.o.cache, "debs"), b.o.mirror)
			return treeSize(tmp), err
		}},
		{"clean the root file system", func() (int64, error) {
			if err := cleanRoot(tmp); err != nil {
				return 0, err
			}
			return treeSize(tmp), os.Rename(tmp, root)
		}},
	}
	// Roots of other keys are of no more use.
	olds, _ := filepath.Glob(filepath.Join(b.o.cache, "root-*"))
	for _, dir := range append(olds, root) {
		if err := removeTree(dir); err != nil {
			return nil, err
		}
	}
	for _, s := range steps {
		if err := b.step(s.name, s.fn); err != nil {
			return nil, err
		}
	}
	var l *layerFile
	err := b.step("python layer", func() (n int64, err error) {
		l, err = b.layer(root, path)
		return size(l), err
	})
	return l, err
}

// tensorFlowLayer is the layer of the Python packages, installed when not cached.
func (b builder) tensorFlowLayer(base *layerFile) (*layerFile, error) {
	p := b.pipPaths(b.o.requirements)
	p.check = "import tensorflow as tf, tf_keras; print('tensorflow', tf.__version__, 'tf_keras', tf_keras.__version__)"
	return b.pipLayer("tensorflow", b.key, p, nil)
}

// pipPaths are the directories pip installs requirements with, in the cache.
func (b builder) pipPaths(requirements string) pipPaths {
	return pipPaths{
		root:         filepath.Join(b.o.cache, "root-"+b.rootKey),
		work:         filepath.Join(b.o.cache, "work"),
		wheels:       filepath.Join(b.o.cache, "wheels"),
		pip:          filepath.Join(b.o.cache, "pip", pipWheel),
		requirements: requirements,
		stage:        filepath.Join(b.o.cache, "stage"),
	}
}

// pipLayer is the layer kind-key of what pip installs as p says, and then more adds to
// its stage (when not nil), made when not cached.
func (b builder) pipLayer(kind, key string, p pipPaths, more func(stage string) error) (*layerFile, error) {
	path := filepath.Join(b.o.cache, "layers", kind+"-"+key+".tar.gz")
	if l := readLayer(path); l != nil {
		fmt.Printf("tensorflow-image: %s layer cached: %s\n", kind, l.Sum)
		return l, nil
	}
	err := b.step("pip install -r "+p.requirements, func() (int64, error) {
		err := pipInstall(p)
		if err == nil && more != nil {
			err = more(p.stage)
		}
		return treeSize(p.stage), err
	})
	if err != nil {
		return nil, err
	}
	var l *layerFile
	err = b.step(kind+" layer", func() (n int64, err error) {
		l, err = b.layer(p.stage, path)
		return size(l), err
	})
	if err == nil {
		err = removeTree(p.stage)
	}
	return l, err
}

// layer writes the layer of dir to path in the cache, removing older ones of its kind.
func (b builder) layer(dir, path string) (*layerFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	kind := strings.SplitN(filepath.Base(path), "-", 2)[0]
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(path), kind+"-*"))
	for _, f := range old {
		os.Remove(f)
	}
	return writeLayer(dir, path)
}

// step runs one step and prints its time and the size of what it made, which fn returns.
func (b builder) step(name string, fn func() (int64, error)) error {
	fmt.Printf("tensorflow-image: %s ...\n", name)
	start := time.Now()
	n, err := fn()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Printf("tensorflow-image: %s: %v, %s\n", name, time.Since(start).Round(100*time.Millisecond), megabytes(n))
	return nil
}

// writeImage writes the layout of spec in dir and returns the size of its blobs.
func writeImage(dir string, spec imageSpec, key string) (int64, error) {
	idx, err := buildImage(spec)
	if err != nil {
		return 0, err
	}
	if err := writeLayout(dir, idx, spec, key); err != nil {
		return 0, err
	}
	return treeSize(dir), nil
}

// defaultCache is $XDG_CACHE_HOME/tfk8s/tensorflow-image, else ~/.cache/tfk8s/tensorflow-image.
func defaultCache() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "tfk8s", "tensorflow-image")
}

// hashOf is the hex SHA-256 of the parts, each ended by a NUL.
func hashOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// treeSize is the size of the regular files under dir, each inode counted once.
func treeSize(dir string) int64 {
	var n int64
	seen := map[uint64]bool{}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		n += info.Size()
		return nil
	})
	return n
}

// size is a layer's compressed size, 0 for none.
func size(l *layerFile) int64 {
	if l == nil {
		return 0
	}
	return l.Length
}

func megabytes(n int64) string {
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
