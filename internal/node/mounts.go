package node

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountRootfs mounts at target an overlay whose only lower layer is lower (an image's
// unpacked root, or the host's root) and whose upper layer is upper (on a tmpfs: an
// overlay's upper layer cannot live in its lower one). runc creates the container's
// mount points there, never in the image or on the host, and then makes the root
// read-only.
func mountRootfs(target, lower, upper, work string) error {
	for _, d := range []string{target, upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating overlay directory: %w", err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)
	if err := unix.Mount("overlay", target, "overlay", unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting the container root overlay at %s: %w", target, err)
	}
	return nil
}

// mountTmpfs mounts a tmpfs at target with the given options (such as "size=64m").
func mountTmpfs(target, opts string) error {
	if err := os.MkdirAll(target, 0o700); err != nil {
		return fmt.Errorf("creating tmpfs mount point: %w", err)
	}
	if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting tmpfs at %s: %w", target, err)
	}
	return nil
}

// unmount detaches the mount at target; nothing mounted there is not an error.
func unmount(target string) error {
	err := unix.Unmount(target, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmounting %s: %w", target, err)
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(dir string) error {
	points, err := MountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range points {
		errs = append(errs, unmount(p))
	}
	return errors.Join(errs...)
}

// MountsUnder lists the mount points at or below dir, deepest first, from the mount
// table of this process's mount namespace.
func MountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mount table: %w", err)
	}
	defer f.Close()
	dir = filepath.Clean(dir)
	var points []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMountPath(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("reading mount table: %w", err)
	}
	sort.SliceStable(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return points, nil
}

// unescapeMountPath decodes the octal escapes (\040 for a space) of /proc mount tables.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
