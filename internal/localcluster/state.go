package localcluster

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/tfk8s/tfk8s/internal/safewrite"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// settings are what a cluster is created with and what later commands must know to
// reach it and tear it down: Up saves them in cluster.yaml.
type settings struct {
	NodeName      string `json:"nodeName"`
	PodCIDR       string `json:"podCIDR"`
	Bridge        string `json:"bridge"`
	ClusterDomain string `json:"clusterDomain"`
	GPUs          int    `json:"gpus,omitempty"`
	RealGPUs      bool   `json:"realGPUs,omitempty"`
	DRAGPUs       int    `json:"draGPUs,omitempty"`
	Nodes         int    `json:"nodes,omitempty"`
	WithoutNode   bool   `json:"withoutNode,omitempty"`
	Ports         Ports  `json:"ports"`
	// Install is how tfk8s was installed: kept, so that status and a later up know
	// the controller runs as pods.
	Install string `json:"install,omitempty"`
	// OldImageDir and OldHostImages are settings of the node clusters had before
	// the upstream node: read, so that such a cluster comes up again, and dropped.
	OldImageDir   string   `json:"imageDir,omitempty"`
	OldHostImages []string `json:"hostImages,omitempty"`
}

// settingsOf returns the settings of opts.
func settingsOf(opts Options) settings {
	return settings{
		NodeName:      opts.NodeName,
		PodCIDR:       opts.PodCIDR,
		Bridge:        opts.Bridge,
		ClusterDomain: opts.ClusterDomain,
		GPUs:          opts.GPUs,
		RealGPUs:      opts.RealGPUs,
		DRAGPUs:       opts.DRAGPUs,
		Nodes:         opts.Nodes,
		WithoutNode:   opts.WithoutNode,
		Ports:         opts.Ports,
		Install:       opts.Install,
	}
}

// resolve defaults opts: the state directory first, then every setting left unset
// from the settings saved there, then the rest from the defaults. A setting given
// explicitly that differs from the saved one is an error while any component runs:
// the running processes were started with the saved one.
func resolve(opts Options) (Options, error) {
	if opts.Dir == "" {
		dir, err := DefaultDir()
		if err != nil {
			return opts, err
		}
		opts.Dir = dir
	}
	abs, err := filepath.Abs(opts.Dir)
	if err != nil {
		return opts, fmt.Errorf("resolving the state directory: %w", err)
	}
	opts.Dir = abs
	saved, err := loadSettings(pathsIn(opts.Dir).clusterState)
	if err != nil {
		return opts, err
	}
	if saved != nil {
		if opts, err = mergeSettings(opts, *saved, anyRunning(opts.Dir, saved.Nodes)); err != nil {
			return opts, err
		}
	}
	return opts.withDefaults()
}

// mergeSettings completes opts with saved; see resolve.
func mergeSettings(opts Options, saved settings, running bool) (Options, error) {
	var errs []error
	// --gpus and --real-gpus are one choice, fake GPUs or the host's: when nothing
	// runs, either given replaces both saved ones, so that a cluster made with
	// --gpus 2 comes up with --real-gpus, and the other way round.
	if !running && (opts.GPUs != 0 || opts.RealGPUs) {
		saved.GPUs, saved.RealGPUs = 0, false
	}
	opts.NodeName = pick(&errs, "--node-name", opts.NodeName, saved.NodeName, running)
	opts.PodCIDR = pick(&errs, "--pod-cidr", opts.PodCIDR, saved.PodCIDR, running)
	opts.Bridge = pick(&errs, "--bridge", opts.Bridge, saved.Bridge, running)
	opts.ClusterDomain = pick(&errs, "--cluster-domain", opts.ClusterDomain, saved.ClusterDomain, running)
	opts.GPUs = pick(&errs, "--gpus", opts.GPUs, saved.GPUs, running)
	opts.RealGPUs = pick(&errs, "--real-gpus", opts.RealGPUs, saved.RealGPUs, running)
	opts.DRAGPUs = pick(&errs, "--dra-gpus", opts.DRAGPUs, saved.DRAGPUs, running)
	// A running cluster keeps its nodes: another count is refused, not applied, since
	// the scheduler may have bound pods to the nodes that would go.
	opts.Nodes = pick(&errs, "--nodes", opts.Nodes, cmp.Or(saved.Nodes, 1), running)
	opts.WithoutNode = pick(&errs, "without a node", opts.WithoutNode, saved.WithoutNode, running)
	opts.Install = pick(&errs, "--install", opts.Install, saved.Install, running)
	ports := opts.Ports.or(saved.Ports)
	if running && ports != saved.Ports.or(ports) {
		errs = append(errs, fmt.Errorf("ports %+v differ from the running cluster's %+v", ports, saved.Ports))
	}
	opts.Ports = ports
	if err := errors.Join(errs...); err != nil {
		return opts, fmt.Errorf("the local cluster in %s is running with other settings (run tfk8s local down first, or use another --dir): %w", opts.Dir, err)
	}
	return opts, nil
}

// pick is the explicit value if set, else the saved one; an explicit value that
// differs from the saved one while the cluster runs is recorded in errs.
func pick[T comparable](errs *[]error, name string, explicit, saved T, running bool) T {
	var zero T
	if explicit == zero {
		return saved
	}
	if running && explicit != saved {
		*errs = append(*errs, fmt.Errorf("%s is %v, not %v", name, saved, explicit))
	}
	return explicit
}

// loadSettings reads cluster.yaml; a missing file gives nil.
func loadSettings(path string) (*settings, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the cluster settings: %w", err)
	}
	s := &settings{}
	if err := sigsyaml.UnmarshalStrict(data, s); err != nil {
		return nil, fmt.Errorf("parsing the cluster settings %s: %w", path, err)
	}
	return s, nil
}

// saveSettings writes cluster.yaml.
func saveSettings(path string, s settings) error {
	data, err := sigsyaml.Marshal(s)
	if err != nil {
		return fmt.Errorf("encoding the cluster settings: %w", err)
	}
	return writeFileAtomic(path, data, 0o644)
}

// writeKubeconfig writes the administrator's kubeconfig for cfg, whose context is
// ContextName.
func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[ContextName] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[ContextName+"-admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[ContextName] = &clientcmdapi.Context{Cluster: ContextName, AuthInfo: ContextName + "-admin", Namespace: "default"}
	kc.CurrentContext = ContextName
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encoding the kubeconfig: %w", err)
	}
	return writeFileAtomic(path, data, 0o600)
}

// loadOrCreateS3Config returns the S3 settings saved in path, or new ones with fresh
// credentials. The endpoint always follows the current bridge address and port.
func loadOrCreateS3Config(path, endpoint string) (storage.Config, error) {
	cfg, err := readS3Config(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return cfg, err
	}
	cfg.Endpoint = endpoint
	cfg.Bucket = cmp.Or(cfg.Bucket, Bucket)
	cfg.Region = cmp.Or(cfg.Region, storage.DefaultRegion)
	cfg.Insecure = true
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		cfg.AccessKeyID = "tfk8s" + randomHex(6)
		cfg.SecretAccessKey = randomHex(20)
	}
	return cfg, nil
}

// readS3Config reads an S3 settings file in the format of ~/.tfk8s/config.
func readS3Config(path string) (storage.Config, error) {
	var cfg storage.Config
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("parsing %s: %w", path, err)
	}
	return cfg, nil
}

// encodeS3Config renders cfg as ~/.tfk8s/config does.
func encodeS3Config(cfg storage.Config) ([]byte, error) {
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the S3 settings: %w", err)
	}
	return append([]byte("# S3 settings of the tfk8s local cluster (tfk8s local up).\n"), data...), nil
}

// writeUserConfig writes the S3 settings to the user's config file unless it exists:
// a user's own settings are never overwritten. It reports whether it wrote.
func writeUserConfig(path string, data []byte) (bool, error) {
	if path == "" {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("creating the directory of %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating %s: %w", path, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	return true, nil
}

// writeFileAtomic writes data to path through a temporary file and a rename, so that
// a reader never sees half a file, and a symlink planted in the state directory (the
// user's to write) is never followed by root.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	return safewrite.File(path, data, perm)
}

// randomHex returns n random bytes in hexadecimal.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}
