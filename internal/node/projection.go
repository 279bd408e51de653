package node

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// defaultFileMode is the mode of projected files when the volume names none.
const defaultFileMode = 0o644

// projectedFile is one file of a configMap, secret, downwardAPI or projected volume.
type projectedFile struct {
	Data []byte
	Mode os.FileMode
}

// projection maps paths relative to a volume's root to their files.
type projection map[string]projectedFile

// add puts data at p with the item's mode, else the volume's default mode.
func (p projection) add(rel string, data []byte, itemMode, defaultMode *int32) {
	mode := os.FileMode(defaultFileMode)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	if itemMode != nil {
		mode = os.FileMode(*itemMode)
	}
	p[rel] = projectedFile{Data: data, Mode: mode}
}

// projectKeys projects a ConfigMap's or Secret's keys: every key at its own name, or
// only the listed items at their paths. A listed key that is missing is an error unless
// the source is optional. data nil means the object does not exist.
func projectKeys(p projection, kind, name string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional bool) error {
	if data == nil {
		if optional {
			return nil
		}
		return fmt.Errorf("%s %s not found", kind, name)
	}
	if len(items) == 0 {
		for k, v := range data {
			p.add(k, v, nil, defaultMode)
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("key %s not found in %s %s", it.Key, kind, name)
		}
		p.add(it.Path, v, it.Mode, defaultMode)
	}
	return nil
}

// projectDownwardAPI projects downward API items, pod fields and container resources,
// each file holding the bare value as the kubelet writes it.
func projectDownwardAPI(p projection, pod *corev1.Pod, fields podFields, items []corev1.DownwardAPIVolumeFile, defaultMode *int32) error {
	for _, it := range items {
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = fieldRefValue(pod, fields, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			value, err = resourceRefValue(pod, "", fields, it.ResourceFieldRef)
		default:
			err = fmt.Errorf("item %s names no field", it.Path)
		}
		if err != nil {
			return fmt.Errorf("downward API item %s: %w", it.Path, err)
		}
		p.add(it.Path, []byte(value), it.Mode, defaultMode)
	}
	return nil
}

// configMapBytes joins a ConfigMap's data and binary data, nil if cm is nil.
func configMapBytes(cm *corev1.ConfigMap) map[string][]byte {
	if cm == nil {
		return nil
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data
}

// secretBytes is a Secret's data, nil if s is nil.
func secretBytes(s *corev1.Secret) map[string][]byte {
	if s == nil {
		return nil
	}
	if s.Data == nil {
		return map[string][]byte{}
	}
	return s.Data
}

// validate refuses paths that are absolute or climb out of the volume.
func (p projection) validate() error {
	for rel := range p {
		clean := path.Clean(rel)
		if rel == "" || path.IsAbs(rel) || clean == ".." || strings.HasPrefix(clean, "../") {
			return fmt.Errorf("projected path %q leaves the volume", rel)
		}
	}
	return nil
}

// write creates the projection's files under dir, replacing what dir held.
func (p projection) write(dir string) error {
	if err := p.validate(); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clearing volume directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating volume directory: %w", err)
	}
	paths := make([]string, 0, len(p))
	for rel := range p {
		paths = append(paths, rel)
	}
	sort.Strings(paths)
	for _, rel := range paths {
		f := p[rel]
		full := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("creating directory for %s: %w", rel, err)
		}
		if err := os.WriteFile(full, f.Data, f.Mode); err != nil {
			return fmt.Errorf("writing %s: %w", rel, err)
		}
		if err := os.Chmod(full, f.Mode); err != nil {
			return fmt.Errorf("setting the mode of %s: %w", rel, err)
		}
	}
	return nil
}
