// Package safewrite writes files as root in directories that others may write to:
// the user's ~/.tfk8s, and local mode's state directory under it.
//
// os.WriteFile opens its path with O_CREATE|O_TRUNC and follows a symlink found there,
// so a user who plants ~/.tfk8s/config.tmp -> /etc/shadow has root overwrite
// /etc/shadow. Here each file is written under a fresh random name, created with
// O_EXCL|O_NOFOLLOW so that nothing planted is ever opened, given its owner and mode
// through the open descriptor, and renamed over the path: a rename replaces a symlink
// at the path rather than writing through it.
package safewrite

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// tries bounds the fresh names tried: a clash of 64 random bits is a planted file.
const tries = 8

// File replaces path with data and mode perm, atomically: a reader sees the old file
// or the new one, never half of one.
func File(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, -1, -1)
}

// Owned is File, with the file owned by uid:gid before it takes path's name, so that
// the user it belongs to never sees it owned by root.
func Owned(path string, data []byte, perm fs.FileMode, uid, gid int) error {
	return write(path, data, perm, uid, gid)
}

// write writes data under a fresh name beside path, gives it its owner (uid -1: the
// caller's) and mode through the descriptor, and renames it to path.
func write(path string, data []byte, perm fs.FileMode, uid, gid int) error {
	f, err := createFresh(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	err = fill(f, data, perm, uid, gid)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// createFresh creates a file of a random name in path's directory that did not exist
// before, refusing to follow a symlink.
func createFresh(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	for range tries {
		b := make([]byte, 8)
		_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
		name := filepath.Join(dir, "."+base+"."+hex.EncodeToString(b)+".tmp")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("no fresh temporary name beside it in %d tries", tries)
}

// fill writes data to f, then its owner and mode: the mode last, since a chown
// clears the setuid and setgid bits.
func fill(f *os.File, data []byte, perm fs.FileMode, uid, gid int) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if uid >= 0 {
		if err := f.Chown(uid, gid); err != nil {
			return err
		}
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	return f.Sync()
}
