package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfk8s/tfk8s/internal/images"
)

// gpuVersion is the way the GPU image's layers are made: change it when that changes,
// so that their key changes.
const gpuVersion = "1"

// gpuLayoutVersion is the way the layout is written of those layers: its key is the
// layers' and this.
const gpuLayoutVersion = "2"

// cudaConf lists the library directories of the nvidia wheels for ldconfig: TensorFlow
// finds them by their place beside it, but ldconfig -p (and any other program that
// links against CUDA) only through /etc/ld.so.cache.
const cudaConf = "etc/ld.so.conf.d/tfk8s-cuda.conf"

// gpuPart is one layer of the GPU image: a directory moved out of pip's stage.
type gpuPart struct {
	Name  string     `json:"name"`
	Layer *layerFile `json:"layer"`
}

// buildGPU writes OUT/tensorflow-gpu/: ghcr.io/tfk8s/tensorflow:2.21.0-gpu, the python
// layer, one layer per nvidia package (the big, slow-changing part: a new TensorFlow
// with the same CUDA wheels reuses them in the registry and on the nodes), and one of
// TensorFlow, the rest of its requirements and the ld.so.conf entry.
func buildGPU(o options) error {
	k, err := inputKeys(o)
	if err != nil {
		return err
	}
	req, err := os.ReadFile(o.gpuRequirements)
	if err != nil {
		return fmt.Errorf("reading --gpu-requirements: %w", err)
	}
	key := hashOf(k.root, pipWheel, gpuVersion, string(req), gpuNotice)
	imageKey := hashOf(key, gpuLayoutVersion)
	dir := filepath.Join(o.out, "tensorflow-gpu")
	if layoutKey(dir) == imageKey {
		fmt.Printf("tensorflow-image: %s up to date (key %s)\n", images.TensorFlowGPU, key[:16])
		return nil
	}
	start := time.Now()
	b := builder{o: o, rootKey: k.root[:16], key: k.tf[:16]}
	base, err := b.pythonLayer()
	if err != nil {
		return err
	}
	parts, err := b.gpuLayers(key[:16])
	if err != nil {
		return err
	}
	layers := []*layerFile{base}
	for _, p := range parts {
		layers = append(layers, p.Layer)
	}
	if err := b.step("write "+dir, func() (int64, error) { return writeImage(dir, tensorFlowGPUSpec(layers), imageKey) }); err != nil {
		return err
	}
	fmt.Printf("tensorflow-image: built %s in %v (key %s)\n", images.TensorFlowGPU, time.Since(start).Round(100*time.Millisecond), key[:16])
	return nil
}

// gpuLayers are the GPU image's layers above the python one, read from the cache
// (gpu-layers/KEY.json lists them) or made: pip installs gpu-requirements.txt, each
// nvidia/NAME directory becomes a layer, and what is left is the last one.
func (b builder) gpuLayers(key string) ([]gpuPart, error) {
	dir := filepath.Join(b.o.cache, "gpu-layers")
	index := filepath.Join(dir, key+".json")
	if parts, ok := readParts(index); ok {
		fmt.Printf("tensorflow-image: %d GPU layers cached\n", len(parts))
		return parts, nil
	}
	// Other keys' layers are of no more use: the disk they take is large.
	if err := removeTree(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := pipPaths{
		root:         filepath.Join(b.o.cache, "root-"+b.rootKey),
		work:         filepath.Join(b.o.cache, "gpu-work"),
		wheels:       filepath.Join(b.o.cache, "gpu-wheels"),
		pip:          filepath.Join(b.o.cache, "pip", pipWheel),
		requirements: b.o.gpuRequirements,
		stage:        filepath.Join(b.o.cache, "gpu-stage"),
		check:        "import tensorflow as tf, tf_keras; print('tensorflow', tf.__version__, 'CUDA', tf.test.is_built_with_cuda())",
	}
	err := b.step("pip install -r "+p.requirements, func() (int64, error) {
		err := pipInstall(p)
		return treeSize(p.stage), err
	})
	if err != nil {
		return nil, err
	}
	// The layers are the cache: the wheels (3.3 GB) would only serve a change of
	// gpu-requirements.txt, which downloads them again in a minute or two. Removed
	// before the layers are written, they keep the build's peak disk use at the 6.6
	// GB pip unpacked and the layers written so far, each part removed once written.
	if err := removeTree(p.wheels); err != nil {
		return nil, err
	}
	parts, err := b.splitGPU(p, dir, key)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(parts)
	if err != nil {
		return nil, err
	}
	return parts, os.WriteFile(index, data, 0o644)
}

// splitGPU makes the layers of what pip staged: the nvidia packages one by one, each
// part removed once its layer is written (the stage is 6 GB), then the rest with the
// ld.so.conf entry, ld.so.cache and the notice.
func (b builder) splitGPU(p pipPaths, dir, key string) ([]gpuPart, error) {
	nvidia := filepath.Join(p.stage, sitePackages, "nvidia")
	entries, err := os.ReadDir(nvidia)
	if err != nil {
		return nil, fmt.Errorf("finding the nvidia packages: %w", err)
	}
	var names, libDirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "__pycache__" {
			names = append(names, e.Name())
			if exists(filepath.Join(nvidia, e.Name(), "lib")) {
				libDirs = append(libDirs, "/"+filepath.Join(sitePackages, "nvidia", e.Name(), "lib"))
			}
		}
	}
	slices.Sort(names)
	if err := addCUDAConf(p, libDirs); err != nil {
		return nil, err
	}
	if err := addNotice(p.stage); err != nil {
		return nil, err
	}
	var parts []gpuPart
	partDir := filepath.Join(b.o.cache, "gpu-part")
	for _, name := range names {
		if err := removeTree(partDir); err != nil {
			return nil, err
		}
		to := filepath.Join(partDir, sitePackages, "nvidia", name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(filepath.Join(nvidia, name), to); err != nil {
			return nil, err
		}
		l, err := b.gpuLayer(partDir, filepath.Join(dir, "nvidia_"+name+"-"+key+".tar.gz"))
		if err != nil {
			return nil, err
		}
		parts = append(parts, gpuPart{Name: "nvidia_" + name, Layer: l})
	}
	l, err := b.gpuLayer(p.stage, filepath.Join(dir, "tensorflow-"+key+".tar.gz"))
	if err != nil {
		return nil, err
	}
	return append(parts, gpuPart{Name: "tensorflow", Layer: l}), removeTree(partDir)
}

// gpuLayer writes the layer of src to path and removes src.
func (b builder) gpuLayer(src, path string) (*layerFile, error) {
	var l *layerFile
	err := b.step(filepath.Base(path), func() (n int64, err error) {
		l, err = writeLayer(src, path)
		return size(l), err
	})
	if err == nil {
		err = removeTree(src)
	}
	return l, err
}

// addCUDAConf writes the ld.so.conf entry of libDirs into the stage, and the
// ld.so.cache ldconfig makes of it: ldconfig runs in a copy, by hard links, of the
// root with the stage over it, where the libraries are at their places in the image.
func addCUDAConf(p pipPaths, libDirs []string) error {
	conf := filepath.Join(p.stage, cudaConf)
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(conf, []byte(strings.Join(libDirs, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if err := removeTree(p.work); err != nil {
		return err
	}
	defer removeTree(p.work)
	if err := run("cp", "-al", p.root, p.work); err != nil {
		return fmt.Errorf("copying the root file system: %w", err)
	}
	if err := run("cp", "-al", p.stage+"/.", p.work); err != nil {
		return fmt.Errorf("copying the stage over the root: %w", err)
	}
	// ldconfig replaces the cache by a new file (the root's, linked here, is untouched);
	// -X: the links it would add would not be in the image.
	if err := chroot(p.work, nil, "ldconfig", "-X"); err != nil {
		return err
	}
	return copyFile(filepath.Join(p.work, "etc/ld.so.cache"), filepath.Join(p.stage, "etc/ld.so.cache"))
}

// readParts reads the GPU layers listed in index, and says whether all are there.
func readParts(index string) ([]gpuPart, bool) {
	data, err := os.ReadFile(index)
	if err != nil {
		return nil, false
	}
	var parts []gpuPart
	if json.Unmarshal(data, &parts) != nil || len(parts) == 0 {
		return nil, false
	}
	for i, p := range parts {
		if p.Layer == nil {
			return nil, false
		}
		path := filepath.Join(filepath.Dir(index), p.Name+"-"+strings.TrimSuffix(filepath.Base(index), ".json")+".tar.gz")
		l := readLayer(path)
		if l == nil || l.Sum != p.Layer.Sum {
			return nil, false
		}
		parts[i].Layer = l
	}
	return parts, true
}

// tensorFlowGPUSpec describes the GPU image.
func tensorFlowGPUSpec(layers []*layerFile) imageSpec {
	return imageSpec{ref: images.TensorFlowGPU, title: "tensorflow",
		description: "Debian " + suite + " (minbase), python3, tensorflow 2.21.0 with the CUDA 12 libraries of its nvidia-*-cu12 wheels, tf-keras and tensorboard",
		layers:      layers, explicitLoad: true}
}
