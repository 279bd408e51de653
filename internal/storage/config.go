package storage

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tfk8s/tfk8s/internal/tfjob"
	"go.yaml.in/yaml/v3"
)

// The environment variables LoadConfig reads are tfjob.EnvS3Endpoint, EnvS3Bucket,
// EnvAccessKeyID, EnvSecretAccessKey, EnvRegion, EnvS3Insecure and EnvS3Prefix: the tfk8s agent
// receives the same names from the controller, so a job and a user's shell share one
// contract.

// DefaultRegion is used when no region is configured. S3-compatible servers accept it,
// and setting one spares minio-go a bucket-location request before every first access.
const DefaultRegion = "us-east-1"

// Config says where the object storage is and how to authenticate.
type Config struct {
	// Endpoint is host:port, or a URL http://host:port (plain HTTP) or https://host:port.
	Endpoint string `json:"endpoint,omitempty" yaml:"endpoint,omitempty"`
	// AccessKeyID and SecretAccessKey are the credentials; both empty means anonymous.
	AccessKeyID     string `json:"accessKeyID,omitempty" yaml:"accessKeyID,omitempty"`
	SecretAccessKey string `json:"secretAccessKey,omitempty" yaml:"secretAccessKey,omitempty"`
	// Region is the bucket's region, DefaultRegion when empty.
	Region string `json:"region,omitempty" yaml:"region,omitempty"`
	// Bucket is the default bucket for uploads, e.g. the CLI's code archives.
	Bucket string `json:"bucket,omitempty" yaml:"bucket,omitempty"`
	// Insecure selects plain HTTP instead of HTTPS.
	Insecure bool `json:"insecure,omitempty" yaml:"insecure,omitempty"`
	// Prefix is the key prefix, ending in "/", under which the CLI stores code, data
	// and runs; empty is the bucket's root. A notebook's key reaches its prefix alone.
	Prefix string `json:"prefix,omitempty" yaml:"prefix,omitempty"`
}

// Root is where the CLI stores: the bucket, under Prefix.
func (c Config) Root() URI {
	return URI{Bucket: c.Bucket, Key: c.Prefix}
}

// DefaultConfigFile returns ~/.tfk8s/config, or "" when the home directory is unknown.
func DefaultConfigFile() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".tfk8s", "config")
}

// LoadConfig resolves each setting from the first source that has it: explicit, then
// the environment read through getenv, then the YAML file at configFile (a missing file
// is not an error; "" skips it). Insecure is true if explicit says so, else it comes
// from TFK8S_S3_INSECURE when set, else from the file. An endpoint written as a URL
// decides Insecure by its scheme. The endpoint is returned as bare host:port.
func LoadConfig(explicit Config, getenv func(string) string, configFile string) (Config, error) {
	env := Config{
		Endpoint:        getenv(tfjob.EnvS3Endpoint),
		Bucket:          getenv(tfjob.EnvS3Bucket),
		AccessKeyID:     getenv(tfjob.EnvAccessKeyID),
		SecretAccessKey: getenv(tfjob.EnvSecretAccessKey),
		Region:          getenv(tfjob.EnvRegion),
		Prefix:          getenv(tfjob.EnvS3Prefix),
	}
	envInsecure, envInsecureSet := false, false
	if v := getenv(tfjob.EnvS3Insecure); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("parsing %s=%q: want true or false", tfjob.EnvS3Insecure, v)
		}
		envInsecure, envInsecureSet = b, true
	}
	file, err := readConfigFile(configFile)
	if err != nil {
		return Config{}, err
	}

	cfg := Config{
		Endpoint:        cmp.Or(explicit.Endpoint, env.Endpoint, file.Endpoint),
		Bucket:          cmp.Or(explicit.Bucket, env.Bucket, file.Bucket),
		AccessKeyID:     cmp.Or(explicit.AccessKeyID, env.AccessKeyID, file.AccessKeyID),
		SecretAccessKey: cmp.Or(explicit.SecretAccessKey, env.SecretAccessKey, file.SecretAccessKey),
		Region:          cmp.Or(explicit.Region, env.Region, file.Region, DefaultRegion),
		Prefix:          cmp.Or(explicit.Prefix, env.Prefix, file.Prefix),
	}
	switch {
	case explicit.Insecure:
		cfg.Insecure = true
	case envInsecureSet:
		cfg.Insecure = envInsecure
	default:
		cfg.Insecure = file.Insecure
	}
	return cfg.normalize()
}

// readConfigFile reads the YAML config file; a missing file gives an empty Config.
func readConfigFile(name string) (Config, error) {
	if name == "" {
		return Config{}, nil
	}
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("reading tfk8s config: %w", err)
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty file
		return Config{}, fmt.Errorf("parsing tfk8s config %s: %w", name, err)
	}
	return c, nil
}

// normalize checks the endpoint and reduces a URL endpoint to host:port, taking
// Insecure from its scheme.
func (c Config) normalize() (Config, error) {
	if c.Endpoint == "" {
		return Config{}, &NotConfiguredError{Msg: fmt.Sprintf("no S3 endpoint configured: set --s3-endpoint, %s or endpoint in %s", tfjob.EnvS3Endpoint, "~/.tfk8s/config")}
	}
	switch {
	case strings.HasPrefix(c.Endpoint, "http://"):
		c.Endpoint, c.Insecure = strings.TrimPrefix(c.Endpoint, "http://"), true
	case strings.HasPrefix(c.Endpoint, "https://"):
		c.Endpoint, c.Insecure = strings.TrimPrefix(c.Endpoint, "https://"), false
	case strings.Contains(c.Endpoint, "://"):
		return Config{}, fmt.Errorf("S3 endpoint %q: scheme must be http or https", c.Endpoint)
	}
	c.Endpoint = strings.TrimSuffix(c.Endpoint, "/")
	if c.Endpoint == "" || strings.Contains(c.Endpoint, "/") {
		return Config{}, fmt.Errorf("S3 endpoint %q: want host:port, without a path", c.Endpoint)
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return Config{}, &NotConfiguredError{Msg: fmt.Sprintf("S3 credentials incomplete: set both %s and %s, or neither", tfjob.EnvAccessKeyID, tfjob.EnvSecretAccessKey)}
	}
	var err error
	if c.Prefix, err = CleanPrefix(c.Prefix); err != nil {
		return Config{}, err
	}
	return c, nil
}

// CleanPrefix checks a storage prefix and gives it its trailing "/" ("" stays ""). A
// prefix is a path of keys: no leading "/", no empty, "." or ".." part, which S3 would
// keep as they are and a reader of the layout would not expect.
func CleanPrefix(p string) (string, error) {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", nil
	}
	for part := range strings.SplitSeq(p, "/") {
		if part == "" || part == "." || part == ".." {
			return "", fmt.Errorf("S3 prefix %q (%s, prefix in ~/.tfk8s/config): want a path like notebooks/team/nb/, without a leading /, // or . and .. parts", p, tfjob.EnvS3Prefix)
		}
	}
	return p + "/", nil
}

// NotConfiguredError says that an S3 setting a command needs is set nowhere (or only
// half): a program tells it from S3's own refusals by its type.
type NotConfiguredError struct{ Msg string }

func (e *NotConfiguredError) Error() string { return e.Msg }
