package pack

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// entry is one file, directory or symbolic link to pack.
type entry struct {
	// name is the slash-separated path relative to the packed directory; directories
	// end with "/".
	name string
	// local is the path on disk.
	local string
	info  fs.FileInfo
	// link is a symbolic link's target.
	link string
}

// walk lists what Pack puts in the archive, depth first in name order, honouring the
// ignore files. Files other than regular files, directories and symbolic links
// (sockets, devices) are left out; a symbolic link that leads outside root is an
// *EscapingLinkError.
func walk(root string) ([]entry, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("packing %s: %w", root, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("packing %s: not a directory", root)
	}
	links, err := NewLinkChecker(root)
	if err != nil {
		return nil, fmt.Errorf("packing %s: %w", root, err)
	}
	var rules ignoreRules
	var out []entry
	if err := walkDir(root, nil, &rules, links, &out); err != nil {
		return nil, fmt.Errorf("packing %s: %w", root, err)
	}
	return out, nil
}

// walkDir appends the entries of the directory whose relative path is rel.
func walkDir(root string, rel []string, rules *ignoreRules, links LinkChecker, out *[]entry) error {
	dir := filepath.Join(append([]string{root}, rel...)...)
	if err := rules.load(dir, rel); err != nil {
		return err
	}
	des, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return err
	}
	for _, de := range des {
		p := append(append([]string(nil), rel...), de.Name())
		isDir := de.IsDir()
		if rules.ignored(p, isDir) {
			continue
		}
		local := filepath.Join(dir, de.Name())
		info, err := de.Info()
		if err != nil {
			return err
		}
		name := path.Join(p...)
		switch {
		case isDir:
			*out = append(*out, entry{name: name + "/", local: local, info: info})
			if err := walkDir(root, p, rules, links, out); err != nil {
				return err
			}
		case info.Mode()&fs.ModeSymlink != 0:
			if err := links.Check(local); err != nil {
				return err
			}
			link, err := os.Readlink(local)
			if err != nil {
				return err
			}
			*out = append(*out, entry{name: name, local: local, info: info, link: link})
		case info.Mode().IsRegular():
			*out = append(*out, entry{name: name, local: local, info: info})
		}
	}
	return nil
}

// Files lists the paths Pack would put in an archive of dir, in archive order,
// slash-separated and relative to dir; directories end with "/".
func Files(dir string) ([]string, error) {
	entries, err := walk(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.name
	}
	return names, nil
}
