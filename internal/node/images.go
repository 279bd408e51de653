package node

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// imageStore keeps pulled images under one directory, which several nodes may share:
//
//	blobs/sha256/<hex>   manifests, configs and compressed layers, by digest
//	roots/sha256/<hex>   each image unpacked once, by its config digest
//	refs/<hex>.json      what a reference last resolved to (sha256 of the reference)
//	tmp/                 files and roots being written, renamed into place when whole
type imageStore struct {
	dir      string
	mirrors  map[string]mirror
	platform v1.Platform

	mu sync.Mutex
	// locks serialise the pulls of one reference and the unpacking of one root within
	// this node; renames into place settle races with other nodes.
	locks map[string]*sync.Mutex
}

// image is an image ready to run: its unpacked root and its configuration.
type image struct {
	// host: the container runs on the host's root (--host-image).
	host bool
	// id is <repository>@<digest the reference resolved to>, the container status's
	// imageID.
	id string
	// root is the unpacked root filesystem, an overlay's lower layer.
	root   string
	config v1.Config
	// size is the manifest's config and layers, compressed, in bytes.
	size int64
}

// imageRecord is what a reference resolved to when last pulled.
type imageRecord struct {
	Reference string `json:"reference"`
	// Digest is what the reference resolved to (an index or a manifest), Manifest
	// the node's platform's manifest.
	Digest   v1.Hash `json:"digest"`
	Manifest v1.Hash `json:"manifest"`
}

func newImageStore(dir string, mirrors map[string]string) (*imageStore, error) {
	parsed, err := parseMirrors(mirrors)
	if err != nil {
		return nil, err
	}
	// Only root may enter: unpacked roots hold the images' set-user-ID programs, and
	// blobs the content of private images.
	for _, d := range []string{"", "blobs/sha256", "roots/sha256", "refs", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("creating the image directory: %w", err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("restricting the image directory to root: %w", err)
	}
	return &imageStore{
		dir: dir, mirrors: parsed,
		platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		locks:    map[string]*sync.Mutex{},
	}, nil
}

func (s *imageStore) blobPath(h v1.Hash) string {
	return filepath.Join(s.dir, "blobs", h.Algorithm, h.Hex)
}

func (s *imageStore) rootPath(config v1.Hash) string {
	return filepath.Join(s.dir, "roots", config.Algorithm, config.Hex)
}

func (s *imageStore) recordPath(ref name.Reference) string {
	return filepath.Join(s.dir, "refs", hashString(ref.Name())+".json")
}

// lookup returns the image ref last resolved to, if its root is unpacked here.
func (s *imageStore) lookup(ref name.Reference) (*image, bool) {
	data, err := os.ReadFile(s.recordPath(ref))
	if err != nil {
		return nil, false
	}
	var rec imageRecord
	if json.Unmarshal(data, &rec) != nil {
		return nil, false
	}
	img, err := s.cachedImage(ref, rec)
	if err != nil {
		return nil, false
	}
	if _, err := os.Stat(img.root); err != nil {
		return nil, false
	}
	return img, true
}

// cachedImage reads the manifest and config of rec from the blob cache.
func (s *imageStore) cachedImage(ref name.Reference, rec imageRecord) (*image, error) {
	raw, err := os.ReadFile(s.blobPath(rec.Manifest))
	if err != nil {
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", rec.Manifest, err)
	}
	rawCfg, err := os.ReadFile(s.blobPath(m.Config.Digest))
	if err != nil {
		return nil, err
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(rawCfg))
	if err != nil {
		return nil, fmt.Errorf("reading image config %s: %w", m.Config.Digest, err)
	}
	return &image{
		id:     imageID(ref, rec.Digest),
		root:   s.rootPath(m.Config.Digest),
		config: cfg.Config,
		size:   manifestSize(m),
	}, nil
}

// imageID names the image by repository and digest, as the kubelet reports it
// (docker.io rather than index.docker.io).
func imageID(ref name.Reference, digest v1.Hash) string {
	repo := ref.Context().Name()
	if rest, ok := strings.CutPrefix(repo, dockerHub+"/"); ok {
		repo = "docker.io/" + rest
	}
	return repo + "@" + digest.String()
}

// manifestSize is the size of an image as registries count it: config and layers,
// compressed.
func manifestSize(m *v1.Manifest) int64 {
	size := m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size
}

// writeRecord remembers what ref resolved to.
func (s *imageStore) writeRecord(ref name.Reference, rec imageRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.writeFile(s.recordPath(ref), bytes.NewReader(data))
}

// writeFile writes r to path through a temporary file renamed into place, so that a
// reader (another node sharing the directory) never sees it half written.
func (s *imageStore) writeFile(path string, r io.Reader) error {
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("creating a file in the image directory: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("renaming %s into place: %w", filepath.Base(path), err)
	}
	return nil
}

// hasBlob reports whether the blob h is cached.
func (s *imageStore) hasBlob(h v1.Hash) bool {
	_, err := os.Stat(s.blobPath(h))
	return err == nil
}

// unpackOnce unpacks the layers of the image whose config is config into its root,
// unless it is already there. It reports whether this call unpacked it.
func (s *imageStore) unpackOnce(config v1.Hash, layers []v1.Hash) (bool, error) {
	defer s.lock("root " + config.String())()
	root := s.rootPath(config)
	if _, err := os.Stat(root); err == nil {
		return false, nil
	}
	tmp := filepath.Join(s.dir, "tmp", "root-"+config.Hex[:12]+"-"+randomHex())
	defer removeTree(tmp)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return false, fmt.Errorf("creating the root of image %s: %w", config, err)
	}
	for _, l := range layers {
		if err := s.applyLayer(tmp, l); err != nil {
			return false, fmt.Errorf("unpacking layer %s: %w", l, err)
		}
	}
	if err := os.Rename(tmp, root); err != nil {
		if _, serr := os.Stat(root); serr == nil {
			return false, nil // another node unpacked it first
		}
		return false, fmt.Errorf("renaming the root of image %s into place: %w", config, err)
	}
	return true, nil
}

// lock takes the lock of key and returns its release.
func (s *imageStore) lock(key string) (unlock func()) {
	s.mu.Lock()
	l, ok := s.locks[key]
	if !ok {
		l = &sync.Mutex{}
		s.locks[key] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// applyLayer applies the cached layer blob l onto root.
func (s *imageStore) applyLayer(root string, l v1.Hash) error {
	f, err := os.Open(s.blobPath(l))
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := decompress(f)
	if err != nil {
		return err
	}
	defer r.Close()
	return extractLayer(root, r)
}

// removeTree removes dir, making read-only directories in it writable first.
func removeTree(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// hashString is the hex sha256 of s.
func hashString(s string) string {
	h, _, _ := v1.SHA256(strings.NewReader(s))
	return h.Hex
}
