package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// Deleted is what Delete removed.
type Deleted struct {
	// Dir is the state directory.
	Dir string
	// Entries are the names of what the directory held, in order; none when there
	// was no state directory.
	Entries []string
	// Bytes is the size of the files removed.
	Bytes int64
}

// Print writes what was removed.
func (d *Deleted) Print(w io.Writer) {
	if len(d.Entries) == 0 {
		fmt.Fprintf(w, "No local cluster in %s: nothing to delete.\n", d.Dir)
		return
	}
	fmt.Fprintf(w, "Deleted the local cluster in %s: removed %s (%s).\n",
		d.Dir, strings.Join(d.Entries, ", "), storage.FormatBytes(d.Bytes))
	fmt.Fprintf(w, "The next tfk8s local up%s makes a new cluster: a new CA, new S3 keys, an empty etcd.\n", dirFlag(d.Dir))
}

// Delete stops the local cluster in opts.Dir as Down does, then removes its state
// directory (etcd's data, certificates, S3 data, the registry's blobs, logs), so
// that the next Up makes a new cluster. A directory that is not a local cluster's
// state directory is refused before anything is stopped; a missing one is nothing
// to delete. When stopping fails, the directory stays: something of the cluster (a
// mount, a process) may still use it.
func Delete(ctx context.Context, opts Options) (*Deleted, error) {
	dir, err := stateDir(opts)
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	real, err := checkStateDir(dir, home)
	if errors.Is(err, fs.ErrNotExist) {
		return &Deleted{Dir: dir}, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := stop(ctx, opts); err != nil {
		return nil, fmt.Errorf("deleting the local cluster in %s, which stays: %w", dir, err)
	}
	return removeStateDir(dir, real)
}

// stateDir is opts.Dir made absolute, or the default state directory.
func stateDir(opts Options) (string, error) {
	dir := opts.Dir
	if dir == "" {
		var err error
		if dir, err = DefaultDir(); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving the state directory: %w", err)
	}
	return abs, nil
}

// checkStateDir returns the real path of dir (its links resolved) if it is a local
// cluster's state directory: a directory holding the cluster.yaml Up writes, neither
// / nor the home directory nor one above it. A missing dir gives fs.ErrNotExist.
func checkStateDir(dir, home string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("resolving the state directory %s (--dir): %w", dir, err)
	}
	refuse := func(why string, args ...any) error {
		return fmt.Errorf("refusing to delete %s (--dir): "+why, append([]any{dir}, args...)...)
	}
	info, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("reading the state directory %s (--dir): %w", dir, err)
	}
	if !info.IsDir() {
		return "", refuse("it is not a directory")
	}
	if real == string(filepath.Separator) {
		return "", refuse("it is the root directory")
	}
	if home != "" {
		if realHome, err := filepath.EvalSymlinks(home); err == nil {
			home = realHome
		}
		switch {
		case real == home:
			return "", refuse("it is the home directory")
		case within(real, home):
			return "", refuse("it holds the home directory %s", home)
		}
	}
	saved, err := loadSettings(pathsIn(real).clusterState)
	switch {
	case err != nil:
		return "", refuse("its cluster.yaml is not a local cluster's settings: %w", err)
	case saved == nil:
		return "", refuse("it holds no cluster.yaml, so it is not a local cluster's state directory")
	}
	return real, nil
}

// within reports whether path lies below dir.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// removeStateDir removes what the directory real holds, then the directory itself,
// unless dir is a link to it: the link and the empty directory it names stay, so that
// the next Up keeps the state where the user put it.
func removeStateDir(dir, real string) (*Deleted, error) {
	entries, err := os.ReadDir(real)
	if err != nil {
		return nil, fmt.Errorf("reading the state directory %s: %w", dir, err)
	}
	d := &Deleted{Dir: dir}
	for _, e := range entries {
		path := filepath.Join(real, e.Name())
		d.Bytes += sizeOf(path)
		if err := os.RemoveAll(path); err != nil {
			return nil, fmt.Errorf("removing %s: %w", path, err)
		}
		d.Entries = append(d.Entries, e.Name())
	}
	if info, err := os.Lstat(dir); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		return d, nil
	}
	if err := os.Remove(real); err != nil {
		return nil, fmt.Errorf("removing the state directory %s: %w", dir, err)
	}
	return d, nil
}

// sizeOf is the size of the regular files at or under path; what cannot be read
// counts for nothing.
func sizeOf(path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
