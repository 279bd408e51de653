package provisioner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// makeVolumeDir creates the directory name in dir, owned and moded as owner says, and
// returns its path. Owner and mode are set through the open directory, so that a
// link put in its place between the calls leads them nowhere.
func makeVolumeDir(dir, name string, owner dirOwner) (string, error) {
	path := filepath.Join(dir, name)
	if _, err := childName(dir, path); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	f, err := root.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.IsDir() {
		return "", fmt.Errorf("%s is not a directory", path)
	}
	// The mode after the owner: a chown clears the setgid bit.
	if err := f.Chown(owner.UID, owner.GID); err != nil {
		return "", err
	}
	if err := f.Chmod(owner.Mode); err != nil {
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
