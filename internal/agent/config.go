package agent

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// The agent's settings come from the environment variables of package tfjob (the
// contract with the controller), each with a flag of the same meaning; a flag given on
// the command line wins.

// Defaults of the settings that have one.
const (
	DefaultArtifactsInterval  = tfjob.DefaultArtifactsInterval
	DefaultLogDir             = "/tfk8s/logs"
	DefaultFinalUploadTimeout = 100 * time.Second
	DefaultNamespace          = "default"
	DefaultChildGrace         = 3 * time.Second
)

// DataSource is an S3 prefix (or object) copied into a directory before the command
// starts; TFK8S_DATA is a JSON list of them.
type DataSource struct {
	Source string `json:"source"`
	Path   string `json:"path"`
}

// Config is everything `tfk8s-agent run` needs.
type Config struct {
	// Storage is where code, data and artifacts are.
	Storage storage.Config

	// CodeSource is the s3:// URI of the code archive, a tar.gz; empty: no code.
	CodeSource string
	// CodeSHA256 is the archive's expected digest; empty: the one in its key, if any.
	CodeSHA256 string
	// CodePath is where the archive is unpacked.
	CodePath string

	// Data lists the prefixes copied in before the command starts.
	Data []DataSource

	// ArtifactsDestination is the s3:// prefix of artifacts and logs; empty: no upload.
	ArtifactsDestination string
	// ArtifactsPaths are the absolute files and directories uploaded.
	ArtifactsPaths []string
	// ArtifactsInterval is the time between uploads while the command runs; 0 uploads
	// only when it stops.
	ArtifactsInterval time.Duration
	// FinalUploadTimeout bounds the upload after the command exits, or from SIGTERM.
	FinalUploadTimeout time.Duration
	// ArtifactsResumeFrom is an earlier job's prefix, <destination>/<namespace>/<job>/,
	// from which the first attempt restores the replica's artifacts; empty: none.
	ArtifactsResumeFrom string

	// ExposeStorageCredentials passes the storage settings on to the command.
	ExposeStorageCredentials bool
	// ChildGrace is the time between SIGTERM and SIGKILL for the processes the
	// command left running when it exited.
	ChildGrace time.Duration

	// Namespace, JobName and Replica (e.g. worker-1) place the replica's artifacts at
	// <destination>/<namespace>/<job>/<replica>/.
	Namespace, JobName, Replica string
	// ContainerName names the log file, <LogDir>/<container>.log.
	ContainerName string
	// PodName and PodUID name the pod in the attempt records.
	PodName, PodUID string
	// Run is the job's run (tfjob.RunID); empty, the replica stores as agents did
	// before runs: under <destination>/<namespace>/<job>/.
	Run string
	// LogDir is where the command's output is written as well as to the agent's own.
	LogDir string

	// Unpack caps the code archive's unpacked bytes and entries.
	Unpack pack.Limits

	// WorkDir is the command's working directory; empty: CodePath when there is code,
	// else the agent's.
	WorkDir string

	// Command is the command and its arguments.
	Command []string

	// ProgressPort is where the lead replica serves its progress (live.go); 0: not.
	ProgressPort int
	// TotalSteps is the step at which training ends, as the user set it; 0: unknown.
	TotalSteps int64

	// Warnings are settings ignored rather than refused, which Run logs.
	Warnings []string
}

// usesStorage reports whether the agent talks to S3 at all.
func (c Config) usesStorage() bool {
	return c.CodeSource != "" || len(c.Data) > 0 || c.ArtifactsDestination != ""
}

// LogFile is the path of the command's log file.
func (c Config) LogFile() string {
	return filepath.Join(c.LogDir, c.ContainerName+".log")
}

// ParseRunArgs parses the arguments of `tfk8s-agent run` (flags, then "--" and the
// command), with getenv giving each unset flag's value.
func ParseRunArgs(args []string, getenv func(string) string) (Config, error) {
	var c Config
	var data, paths, interval, finalTimeout, expose, grace, maxBytes, maxEntries string
	fs := flag.NewFlagSet("tfk8s-agent run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	str := func(p *string, name, env, def, usage string) {
		fs.StringVar(p, name, cmp.Or(getenv(env), def), usage+" (env "+env+")")
	}
	str(&c.Storage.Endpoint, "s3-endpoint", tfjob.EnvS3Endpoint, "", "S3 endpoint, host:port or http(s)://host:port")
	str(&c.Storage.Region, "s3-region", tfjob.EnvRegion, "", "S3 region")
	fs.BoolVar(&c.Storage.Insecure, "s3-insecure", false, "plain HTTP to S3 (env "+tfjob.EnvS3Insecure+")")
	str(&c.CodeSource, "code-source", tfjob.EnvCodeSource, "", "s3:// URI of the code archive")
	str(&c.CodeSHA256, "code-sha256", tfjob.EnvCodeSHA256, "", "expected SHA-256 of the code archive")
	str(&c.CodePath, "code-path", tfjob.EnvCodePath, tfjob.DefaultCodePath, "directory the code is unpacked in")
	str(&data, "data", tfjob.EnvData, "", `JSON list of {"source": "s3://...", "path": "/dir"}`)
	str(&c.ArtifactsDestination, "artifacts-destination", tfjob.EnvArtifactsDestination, "", "s3:// prefix of artifacts and logs")
	str(&paths, "artifacts-paths", tfjob.EnvArtifactsPaths, "", "JSON list of absolute paths to upload")
	str(&interval, "artifacts-interval", tfjob.EnvArtifactsInterval, DefaultArtifactsInterval.String(), "time between uploads; 0: at exit only")
	str(&finalTimeout, "final-upload-timeout", tfjob.EnvFinalUploadTimeout, DefaultFinalUploadTimeout.String(), "bound of the last upload")
	str(&c.Namespace, "namespace", tfjob.EnvNamespace, DefaultNamespace, "the job's namespace")
	str(&c.JobName, "job-name", tfjob.EnvJobName, "", "the job's name")
	str(&c.Replica, "replica", tfjob.EnvReplica, "", "the replica, e.g. worker-1")
	str(&c.ContainerName, "container-name", tfjob.EnvContainerName, tfjob.ContainerName, "the container, naming its log")
	str(&c.LogDir, "log-dir", tfjob.EnvLogDir, DefaultLogDir, "directory of the log file")
	str(&c.WorkDir, "workdir", tfjob.EnvWorkDir, "", "the command's working directory")
	str(&c.ArtifactsResumeFrom, "artifacts-resume-from", tfjob.EnvArtifactsResumeFrom, "", "s3:// prefix of an earlier job whose artifacts the first attempt restores")
	str(&expose, "expose-storage-credentials", tfjob.EnvExposeStorageCredentials, "false", "pass the storage settings and credentials on to the command")
	str(&grace, "child-grace", tfjob.EnvChildGrace, DefaultChildGrace.String(), "time the command's leftover processes get between SIGTERM and SIGKILL")
	str(&c.PodName, "pod-name", tfjob.EnvPodName, "", "the pod's name, for the attempt records")
	str(&c.PodUID, "pod-uid", tfjob.EnvPodUID, "", "the pod's UID, for the attempt records")
	str(&c.Run, "run", tfjob.EnvRun, "", "the job's run, under which the replica stores")
	str(&maxBytes, "unpack-max-bytes", tfjob.EnvUnpackMaxBytes, strconv.FormatInt(pack.DefaultMaxBytes, 10), "cap on the bytes the code archive unpacks to")
	str(&maxEntries, "unpack-max-entries", tfjob.EnvUnpackMaxEntries, strconv.FormatInt(pack.DefaultMaxEntries, 10), "cap on the entries of the code archive")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	c.Command = fs.Args()
	if len(c.Command) == 0 {
		return Config{}, errors.New("no command: usage: tfk8s-agent run [flags] -- COMMAND [ARGS...]")
	}

	var err error
	if c.ArtifactsInterval, err = parseDuration("artifacts interval", interval); err != nil {
		return Config{}, err
	}
	if c.FinalUploadTimeout, err = parseDuration("final upload timeout", finalTimeout); err != nil {
		return Config{}, err
	}
	if c.ChildGrace, err = parseDuration("child grace", grace); err != nil {
		return Config{}, err
	}
	if c.Unpack, err = parseCaps(maxBytes, maxEntries); err != nil {
		return Config{}, err
	}
	if c.ExposeStorageCredentials, err = strconv.ParseBool(expose); err != nil {
		return Config{}, fmt.Errorf("parsing %s %q: want true or false", tfjob.EnvExposeStorageCredentials, expose)
	}
	if err := c.parseLists(data, paths); err != nil {
		return Config{}, err
	}
	if c.ProgressPort, c.TotalSteps, err = parseProgress(getenv); err != nil {
		return Config{}, err
	}
	if s := getenv(tfjob.EnvTotalSteps); s != "" && c.TotalSteps == 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("ignoring %s %q: want a whole number of steps, at least 1; the total is unknown", tfjob.EnvTotalSteps, s))
	}
	if err := c.validate(); err != nil {
		return Config{}, err
	}
	if c.usesStorage() {
		// Credentials come from the environment only: flags would show in ps.
		if c.Storage, err = storage.LoadConfig(c.Storage, getenv, ""); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// validate checks the settings that ParseRunArgs cannot check by parsing alone.
func (c Config) validate() error {
	var errs []error
	if c.CodeSource != "" {
		if _, err := storage.ParseURI(c.CodeSource); err != nil {
			errs = append(errs, fmt.Errorf("code source: %w", err))
		}
	}
	if c.CodeSHA256 != "" && !isHexDigest(c.CodeSHA256) {
		errs = append(errs, fmt.Errorf("code sha256 %q: want 64 lower-case hex digits", c.CodeSHA256))
	}
	if !filepath.IsAbs(c.CodePath) {
		errs = append(errs, fmt.Errorf("code path %q: must be absolute", c.CodePath))
	}
	for _, d := range c.Data {
		if _, err := storage.ParseURI(d.Source); err != nil {
			errs = append(errs, fmt.Errorf("data source: %w", err))
		}
		if !filepath.IsAbs(d.Path) {
			errs = append(errs, fmt.Errorf("data path %q: must be absolute", d.Path))
		}
	}
	if c.ArtifactsDestination != "" {
		if _, err := storage.ParseURI(c.ArtifactsDestination); err != nil {
			errs = append(errs, fmt.Errorf("artifacts destination: %w", err))
		}
		if c.JobName == "" || c.Replica == "" {
			errs = append(errs, fmt.Errorf("artifacts destination needs the job name and replica (%s, %s)", tfjob.EnvJobName, tfjob.EnvReplica))
		}
	}
	if c.ArtifactsResumeFrom != "" {
		if u, err := storage.ParseURI(c.ArtifactsResumeFrom); err != nil {
			errs = append(errs, fmt.Errorf("artifacts resume from: %w", err))
		} else if !u.IsPrefix() {
			errs = append(errs, fmt.Errorf("artifacts resume from %q: want a prefix ending in /, <destination>/<namespace>/<job>/", c.ArtifactsResumeFrom))
		}
		if c.ArtifactsDestination == "" {
			errs = append(errs, fmt.Errorf("artifacts resume from %q needs an artifacts destination (%s)", c.ArtifactsResumeFrom, tfjob.EnvArtifactsDestination))
		}
	}
	for _, p := range c.ArtifactsPaths {
		if !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("artifacts path %q: must be absolute", p))
		}
	}
	if c.ChildGrace < 0 {
		errs = append(errs, fmt.Errorf("child grace %v: must not be negative", c.ChildGrace))
	}
	if c.ArtifactsInterval < 0 {
		errs = append(errs, fmt.Errorf("artifacts interval %v: must not be negative", c.ArtifactsInterval))
	}
	if strings.ContainsRune(c.ContainerName, '/') || c.ContainerName == "" {
		errs = append(errs, fmt.Errorf("container name %q: must be a plain name", c.ContainerName))
	}
	return errors.Join(errs...)
}

// parseDuration parses a Go duration, naming the setting in the error.
func parseDuration(what, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("parsing %s %q: want a duration such as 60s", what, s)
	}
	return d, nil
}

// parseCaps parses the caps on unpacking, positive integers, naming the variable of
// the one refused.
func parseCaps(maxBytes, maxEntries string) (pack.Limits, error) {
	var lim pack.Limits
	for _, c := range []struct {
		env, s string
		n      *int64
	}{{tfjob.EnvUnpackMaxBytes, maxBytes, &lim.MaxBytes}, {tfjob.EnvUnpackMaxEntries, maxEntries, &lim.MaxEntries}} {
		n, err := strconv.ParseInt(c.s, 10, 64)
		if err != nil || n <= 0 {
			return pack.Limits{}, fmt.Errorf("parsing %s %q: want a positive whole number", c.env, c.s)
		}
		*c.n = n
	}
	return lim, nil
}

// parseLists reads the data sources and the artifact paths, JSON lists.
func (c *Config) parseLists(data, paths string) error {
	if data != "" {
		if err := json.Unmarshal([]byte(data), &c.Data); err != nil {
			return fmt.Errorf("parsing %s %q: want a JSON list of {\"source\", \"path\"}: %w", tfjob.EnvData, data, err)
		}
	}
	if paths != "" {
		if err := json.Unmarshal([]byte(paths), &c.ArtifactsPaths); err != nil {
			return fmt.Errorf("parsing %s %q: want a JSON list of absolute paths: %w", tfjob.EnvArtifactsPaths, paths, err)
		}
	}
	return nil
}

// parseProgress reads the port the progress is served on, refusing a bad one, and the
// total steps the user set; unset, each is 0, and so is a total that is not a whole
// number from 1: the user's setting must not fail the job.
func parseProgress(getenv func(string) string) (port int, total int64, err error) {
	if s := getenv(tfjob.EnvProgressPort); s != "" {
		if port, err = strconv.Atoi(s); err != nil || port < 1 || port > 65535 {
			return 0, 0, fmt.Errorf("parsing %s %q: want a port from 1 to 65535", tfjob.EnvProgressPort, s)
		}
	}
	if s := getenv(tfjob.EnvTotalSteps); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 1 {
			total = n
		}
	}
	return port, total, nil
}

// isHexDigest reports whether s is a hex SHA-256 digest.
func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
