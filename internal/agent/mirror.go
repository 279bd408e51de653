package agent

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

const (
	// DefaultMirrorInterval is the time between two passes of `tfk8s-agent mirror`.
	DefaultMirrorInterval = 5 * time.Second
	// mirrorFinalTimeout bounds the last pass, after SIGTERM.
	mirrorFinalTimeout = 20 * time.Second
	// mirrorTempPattern names files being downloaded: hidden, and without "tfevents",
	// so that TensorBoard, which reads every file whose name has it, never reads one.
	mirrorTempPattern = ".tfk8s-mirror-*"
)

// MirrorConfig is everything `tfk8s-agent mirror` needs.
type MirrorConfig struct {
	// Storage is where the objects are.
	Storage storage.Config
	// From is the mirrored prefix, s3://BUCKET/PREFIX/.
	From storage.URI
	// To is the local directory kept up to date.
	To string
	// Interval is the time between passes.
	Interval time.Duration
	// Include are globs matched against a key's base name; none: every key.
	Include []string
}

// globs collects the repeated --include flag.
type globs []string

func (g *globs) String() string     { return strings.Join(*g, ",") }
func (g *globs) Set(s string) error { *g = append(*g, s); return nil }

// ParseMirrorArgs parses the arguments of `tfk8s-agent mirror`; the storage settings
// come from the same environment as `tfk8s-agent run`'s.
func ParseMirrorArgs(args []string, getenv func(string) string) (MirrorConfig, error) {
	var c MirrorConfig
	var from string
	fs := flag.NewFlagSet("tfk8s-agent mirror", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.Storage.Endpoint, "s3-endpoint", getenv(tfjob.EnvS3Endpoint), "S3 endpoint (env "+tfjob.EnvS3Endpoint+")")
	fs.StringVar(&c.Storage.Region, "s3-region", getenv(tfjob.EnvRegion), "S3 region (env "+tfjob.EnvRegion+")")
	fs.BoolVar(&c.Storage.Insecure, "s3-insecure", false, "plain HTTP to S3 (env "+tfjob.EnvS3Insecure+")")
	fs.StringVar(&from, "from", "", "s3://BUCKET/PREFIX/ to mirror")
	fs.StringVar(&c.To, "to", "", "local directory to keep up to date")
	fs.DurationVar(&c.Interval, "interval", DefaultMirrorInterval, "time between passes")
	fs.Var((*globs)(&c.Include), "include", "glob matched against a key's base name (repeatable); none: every key")
	if err := fs.Parse(args); err != nil {
		return MirrorConfig{}, err
	}
	if fs.NArg() > 0 {
		return MirrorConfig{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var errs []error
	u, err := storage.ParseURI(from)
	switch {
	case from == "":
		errs = append(errs, errors.New("--from is required: s3://BUCKET/PREFIX/"))
	case err != nil:
		errs = append(errs, fmt.Errorf("--from: %w", err))
	case u.Key != "" && !u.IsPrefix():
		errs = append(errs, fmt.Errorf("--from %q: want a prefix ending in /", from))
	}
	c.From = u
	if c.To == "" {
		errs = append(errs, errors.New("--to is required: the local directory"))
	}
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("--interval %v: must be positive", c.Interval))
	}
	for _, g := range c.Include {
		if _, err := path.Match(g, ""); err != nil {
			errs = append(errs, fmt.Errorf("--include %q: %w", g, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return MirrorConfig{}, err
	}
	if c.Storage, err = storage.LoadConfig(c.Storage, getenv, ""); err != nil {
		return MirrorConfig{}, err
	}
	return c, nil
}

// RunMirror runs `tfk8s-agent mirror` until SIGTERM or SIGINT, then makes one last
// pass, so that TensorBoard shows what a finished job wrote last, and returns 0.
func RunMirror(cfg MirrorConfig, logOut io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := Mirror(ctx, cfg, logOut); err != nil {
		fmt.Fprintf(logOut, "tfk8s-agent mirror: %v\n", err)
		return ExitInternal
	}
	return 0
}

// Mirror brings cfg.To up to date with cfg.From every interval until ctx ends, then
// once more. Failed passes are logged and retried at the next interval: S3 may be
// down for a while, and TensorBoard keeps what it has.
func Mirror(ctx context.Context, cfg MirrorConfig, logOut io.Writer) error {
	client, err := storage.New(cfg.Storage)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.To, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", cfg.To, err)
	}
	m := &mirror{client: client, from: cfg.From, to: cfg.To, include: cfg.Include, log: logOut, etags: map[string]string{}}
	ticker := time.NewTicker(cfg.Interval)
	defer ticker.Stop()
	for {
		m.logPass(m.pass(ctx))
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), mirrorFinalTimeout)
			defer cancel()
			m.logPass(m.pass(final))
			return nil
		case <-ticker.C:
		}
	}
}

// mirrorStats counts what a pass changed.
type mirrorStats struct {
	added, grown, replaced int
	bytes                  int64
}

func (s mirrorStats) changed() bool { return s.added+s.grown+s.replaced > 0 }

// mirror is one mirrored prefix and its directory.
type mirror struct {
	client  *storage.Client
	from    storage.URI
	to      string
	include []string
	log     io.Writer
	// etags are the objects' entity tags when last mirrored, by key: an object of the
	// same size with another tag changed otherwise than by growing.
	etags map[string]string
}

// logPass writes one line for a pass that changed something, and one per error.
func (m *mirror) logPass(s mirrorStats, err error) {
	if s.changed() {
		fmt.Fprintf(m.log, "Mirrored %s to %s: %d new, %d grown, %d replaced files, %d bytes\n",
			m.from, m.to, s.added, s.grown, s.replaced, s.bytes)
	}
	if err != nil {
		fmt.Fprintf(m.log, "Mirroring %s: %v\n", m.from, err)
	}
}

// pass lists the prefix once and updates every included object's file.
func (m *mirror) pass(ctx context.Context) (mirrorStats, error) {
	var s mirrorStats
	objs, err := m.client.List(ctx, m.from)
	if err != nil {
		return s, err
	}
	var errs []error
	for _, obj := range objs {
		rel := strings.TrimPrefix(obj.URI.Key, m.from.Key)
		if rel == "" || strings.HasSuffix(rel, "/") || !m.included(path.Base(rel)) {
			continue
		}
		local, err := localPath(m.to, rel)
		if err == nil {
			err = m.update(ctx, obj, local, &s)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("mirroring %s: %w", obj.URI, err))
		}
	}
	return s, errors.Join(errs...)
}

// localPath is where the object at rel, a key relative to the prefix, goes in dir.
// S3 keys are any strings: one with ".." segments or a leading "/" would land outside
// dir, and is refused.
func localPath(dir, rel string) (string, error) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("refusing the key: %q leaves %s", rel, dir)
	}
	return filepath.Join(dir, filepath.FromSlash(rel)), nil
}

// included reports whether a base name matches an include glob (or there are none).
func (m *mirror) included(base string) bool {
	for _, g := range m.include {
		if ok, _ := path.Match(g, base); ok {
			return true
		}
	}
	return len(m.include) == 0
}

// update brings one file up to date with its object and records the object's tag.
func (m *mirror) update(ctx context.Context, obj storage.Object, local string, s *mirrorStats) error {
	err := m.updateFile(ctx, obj, local, s)
	if err == nil {
		m.etags[obj.URI.Key] = obj.ETag
	}
	return err
}

// updateFile: new objects are downloaded, grown ones get their new bytes appended in
// place (TensorBoard's open reader sees them, a renamed file it would not), others
// that changed are replaced. A file found at start-up with its object's size is kept.
func (m *mirror) updateFile(ctx context.Context, obj storage.Object, local string, s *mirrorStats) error {
	st, err := os.Stat(local)
	etag, known := m.etags[obj.URI.Key]
	switch {
	case errors.Is(err, os.ErrNotExist):
		n, err := m.replace(ctx, obj, local)
		s.added, s.bytes = s.added+1, s.bytes+n
		return err
	case err != nil:
		return fmt.Errorf("reading %s: %w", local, err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("refusing to write %s: not a regular file", local)
	case st.Size() == obj.Size && (!known || etag == obj.ETag):
		return nil
	case st.Size() < obj.Size:
		// Event files are append-only: a grown object kept what the file has.
		n, err := m.appendTail(ctx, obj, local, st.Size())
		s.grown, s.bytes = s.grown+1, s.bytes+n
		return err
	default:
		n, err := m.replace(ctx, obj, local)
		s.replaced, s.bytes = s.replaced+1, s.bytes+n
		return err
	}
}

// appendTail appends bytes [have, obj.Size) of the object to the file. A failure
// leaves a shorter file, which the next pass completes.
func (m *mirror) appendTail(ctx context.Context, obj storage.Object, local string, have int64) (int64, error) {
	f, err := os.OpenFile(local, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return 0, fmt.Errorf("appending to %s: %w", local, err)
	}
	n, err := m.client.DownloadRange(ctx, obj.URI, have, obj.Size, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("appending to %s: %w", local, cerr)
	}
	return n, err
}

// replace downloads the object to a temporary file beside local and renames it into
// place, so that no reader ever sees a partial file.
func (m *mirror) replace(ctx context.Context, obj storage.Object, local string) (int64, error) {
	dir := filepath.Dir(local)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, mirrorTempPattern)
	if err != nil {
		return 0, fmt.Errorf("creating a file in %s: %w", dir, err)
	}
	n, err := m.client.Download(ctx, obj.URI, f)
	err = cmp.Or(err, f.Chmod(0o644), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), local)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return 0, fmt.Errorf("downloading to %s: %w", local, err)
	}
	return n, nil
}
