package provisioner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// makeVolumeDir creates the directory name in dir and returns its path. It is writable
// by every user, as the home-made node's volumes were, so that a pod running as any
// user can write its volume.
func makeVolumeDir(dir, name string) (string, error) {
	path := filepath.Join(dir, name)
	if _, err := childName(dir, path); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.Mkdir(name, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	// Mkdir's mode went through the umask.
	if err := root.Chmod(name, 0o777); err != nil {
		return "", err
	}
	return path, nil
}

// removeVolumeDir removes the volume directory path with all it holds. The path must
// name a directory of dir, by name: symbolic links are removed, never followed, so
// that nothing outside dir goes. A directory already gone is fine.
func removeVolumeDir(dir, path string) error {
	name, err := childName(dir, path)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	return root.RemoveAll(name)
}

// childName is the name of path in dir, when path, written clean, names an entry of dir
// itself. It compares names only: it resolves no links.
func childName(dir, path string) (string, error) {
	name := filepath.Base(path)
	if name == "." || name == ".." || name == string(filepath.Separator) || filepath.Join(dir, name) != path {
		return "", fmt.Errorf("path %q is not a directory of %s", path, dir)
	}
	return name, nil
}
