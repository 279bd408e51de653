package jobspec

import (
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

const volumeFlagHelp = `volume mounted in every replica: name=NAME,mount=PATH and either size=SIZE[,storageClass=CLASS][,retain] (a claim made for the job, deleted with it unless retain) or existing=CLAIM; add readOnly to mount it read-only; repeatable`

// parseVolumes parses every --volume value; two may not share a name or a mount path.
func parseVolumes(values []string) ([]tfv1.JobVolume, error) {
	var vs []tfv1.JobVolume
	for _, s := range values {
		v, err := parseVolume(s)
		if err != nil {
			return nil, err
		}
		for _, w := range vs {
			if w.Name == v.Name || w.MountPath == v.MountPath {
				return nil, fmt.Errorf("--volume %q: another --volume has the name %s or the mount %s", s, v.Name, v.MountPath)
			}
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// parseVolume parses one --volume value.
func parseVolume(s string) (tfv1.JobVolume, error) {
	var v tfv1.JobVolume
	fail := func(format string, args ...any) (tfv1.JobVolume, error) {
		return tfv1.JobVolume{}, fmt.Errorf("--volume %q: %s", s, fmt.Sprintf(format, args...))
	}
	for _, part := range strings.Split(s, ",") {
		key, value, hasValue := strings.Cut(part, "=")
		if (key == "readOnly" || key == "retain") && !hasValue {
			value, hasValue = "true", true
		}
		if !hasValue || value == "" {
			return fail("%q: want KEY=VALUE (keys: name, mount, size, storageClass, existing, readOnly, retain)", part)
		}
		switch key {
		case "name":
			if errs := validation.IsDNS1035Label(value); len(errs) > 0 || len(value) > 40 {
				return fail("name %q: want a lower-case DNS label of at most 40 characters", value)
			}
			v.Name = value
		case "mount":
			if !path.IsAbs(value) || value == "/" {
				return fail("mount %q: want an absolute path other than /", value)
			}
			v.MountPath = path.Clean(value)
		case "size":
			q, err := ParseQuantity("size", value)
			if err != nil {
				return fail("%v", err)
			}
			v.Size = q
		case "storageClass":
			v.StorageClassName = ptr.To(value)
		case "existing":
			v.ExistingClaim = value
		case "readOnly", "retain":
			b, err := parseBool(value)
			if err != nil {
				return fail("%s=%q: want true or false", key, value)
			}
			if key == "readOnly" {
				v.ReadOnly = b
			} else {
				v.Retain = b
			}
		default:
			return fail("unknown key %q (keys: name, mount, size, storageClass, existing, readOnly, retain)", key)
		}
	}
	switch {
	case v.Name == "":
		return fail("name is required")
	case v.MountPath == "":
		return fail("mount is required")
	case (v.Size == nil) == (v.ExistingClaim == ""):
		return fail("give either size (a claim made for the job) or existing (a claim of the namespace)")
	case v.ExistingClaim != "" && (v.StorageClassName != nil || v.Retain):
		return fail("storageClass and retain are for the claims made for the job, not for existing")
	}
	return v, nil
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "yes", "1":
		return true, nil
	case "false", "no", "0":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean: %q", s)
}

// HasVolume reports whether the job has a volume of that name.
func HasVolume(job *tfv1.TFJob, name string) bool {
	for _, v := range job.Spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}

// mergeVolumes sets the volumes given by flags over those of the manifest, by name.
func mergeVolumes(job *tfv1.TFJob, vs []tfv1.JobVolume) {
	for _, v := range vs {
		replaced := false
		for i := range job.Spec.Volumes {
			if job.Spec.Volumes[i].Name == v.Name {
				job.Spec.Volumes[i], replaced = v, true
			}
		}
		if !replaced {
			job.Spec.Volumes = append(job.Spec.Volumes, v)
		}
	}
}
