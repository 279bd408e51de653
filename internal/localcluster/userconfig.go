package localcluster

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tfk8s/tfk8s/internal/safewrite"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// UserConfigOutcome is what Up did with the user's tfk8s config file
// (Options.UserConfigFile), which the CLI reads S3 settings from.
type UserConfigOutcome string

const (
	// UserConfigCreated says the file did not exist and now holds the cluster's S3
	// settings.
	UserConfigCreated UserConfigOutcome = "Created"
	// UserConfigUpdated says the file named the cluster's S3 endpoint with other
	// settings (the keys of a cluster since deleted) and now holds the cluster's.
	UserConfigUpdated UserConfigOutcome = "Updated"
	// UserConfigCurrent says the file held the cluster's S3 settings already.
	UserConfigCurrent UserConfigOutcome = "Current"
	// UserConfigElsewhere says the file names another S3 endpoint, or none, and was
	// left as it is: it is the user's own.
	UserConfigElsewhere UserConfigOutcome = "Elsewhere"
)

// decideUserConfig decides what Up does with the user's config, which holds existing
// (nil when there is no file), given the cluster's S3 settings; it returns the
// settings to write for Created and Updated. A file is the cluster's when it names
// the cluster's endpoint: its keys then follow the cluster, and a bucket or region of
// its own stays. A file naming another endpoint may point at a real S3, or at
// another local cluster that runs beside this one, so it is never rewritten.
func decideUserConfig(existing *storage.Config, cluster storage.Config) (UserConfigOutcome, storage.Config) {
	if existing == nil {
		return UserConfigCreated, cluster
	}
	if hostPort(existing.Endpoint) != hostPort(cluster.Endpoint) {
		return UserConfigElsewhere, storage.Config{}
	}
	want := cluster
	want.Bucket = cmp.Or(existing.Bucket, cluster.Bucket)
	want.Region = cmp.Or(existing.Region, cluster.Region)
	if *existing == want {
		return UserConfigCurrent, storage.Config{}
	}
	return UserConfigUpdated, want
}

// hostPort is an endpoint without its http:// or https:// and trailing slash, as
// storage reads it.
func hostPort(endpoint string) string {
	for _, scheme := range []string{"http://", "https://"} {
		endpoint = strings.TrimPrefix(endpoint, scheme)
	}
	return strings.TrimSuffix(endpoint, "/")
}

// updateUserConfig brings the user's config file at path in line with the cluster's
// S3 settings, as decideUserConfig says, and returns the outcome and the endpoint
// the file names. A file that cannot be parsed is the user's and is left alone.
func updateUserConfig(path string, cluster storage.Config) (UserConfigOutcome, string, error) {
	var existing *storage.Config
	cfg, err := readS3Config(path)
	switch {
	case errors.Is(err, fs.ErrNotExist): // no file: existing stays nil
	case err != nil:
		return UserConfigElsewhere, "", nil
	default:
		existing = &cfg
	}
	outcome, want := decideUserConfig(existing, cluster)
	if outcome != UserConfigCreated && outcome != UserConfigUpdated {
		return outcome, cfg.Endpoint, nil
	}
	data, err := encodeS3Config(want)
	if err != nil {
		return "", "", err
	}
	if outcome == UserConfigCreated {
		wrote, err := writeUserConfig(path, data)
		if err != nil || wrote {
			return outcome, want.Endpoint, err
		}
		// Created meanwhile by someone else: theirs.
		return UserConfigElsewhere, "", nil
	}
	if err := replaceKeepingOwner(path, data); err != nil {
		return "", "", err
	}
	return outcome, want.Endpoint, nil
}

// replaceKeepingOwner replaces the file at path (its link followed) with data,
// atomically, keeping its owner and mode: up runs as root, and the user who owns the
// file must still read it. A link is followed only to a file of the link's owner: a
// user's dotfiles may link their config elsewhere, but root must not be led by one
// to rewrite a file that is not theirs.
func replaceKeepingOwner(path string, data []byte) error {
	link, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	info, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	owner, linkOwner := ownerOf(info), ownerOf(link)
	if !info.Mode().IsRegular() || owner.uid != linkOwner.uid {
		return fmt.Errorf("%s is not a regular file of the owner of its link (uid %d): left as it is", path, linkOwner.uid)
	}
	return safewrite.Owned(path, data, info.Mode().Perm(), owner.uid, owner.gid)
}

// fileOwner is a file's user and group.
type fileOwner struct{ uid, gid int }

// ownerOf is the owner of the file info describes.
func ownerOf(info fs.FileInfo) fileOwner {
	st := info.Sys().(*syscall.Stat_t) // always, on Linux
	return fileOwner{int(st.Uid), int(st.Gid)}
}

// saveUserConfig brings the user's config file (none if empty) in line with the
// cluster's S3 settings s3 and records in st what it did.
func saveUserConfig(st *Status, file string, s3 storage.Config) error {
	st.UserConfig = file
	if st.UserConfig == "" {
		return nil
	}
	outcome, endpoint, err := updateUserConfig(st.UserConfig, s3)
	if err != nil {
		return err
	}
	st.UserConfigOutcome, st.UserConfigEndpoint = outcome, endpoint
	st.UserConfigWritten = outcome == UserConfigCreated || outcome == UserConfigUpdated
	return nil
}

// printUserConfig says whether tfk8s reaches the cluster's S3 server through the
// user's config file, and how to if it does not.
func (s *Status) printUserConfig(w io.Writer) {
	switch s.UserConfigOutcome {
	case UserConfigCreated:
		fmt.Fprintf(w, "The S3 settings were written to %s: tfk8s uses the cluster's S3 server.\n", s.UserConfig)
	case UserConfigUpdated:
		fmt.Fprintf(w, "%s held an earlier cluster's keys for this S3 endpoint: it now holds this cluster's, so tfk8s uses its S3 server.\n", s.UserConfig)
	case UserConfigCurrent:
		fmt.Fprintf(w, "%s holds the cluster's S3 settings: tfk8s uses its S3 server.\n", s.UserConfig)
	case UserConfigElsewhere:
		names := "does not name the cluster's S3 endpoint " + s.S3.Endpoint
		if s.UserConfigEndpoint != "" {
			names = "points at S3 endpoint " + s.UserConfigEndpoint + ", not the cluster's " + s.S3.Endpoint
		}
		fmt.Fprintf(w, "%s %s, and was left as it is; to use the cluster's S3 server instead:\n  export TFK8S_CONFIG=%s\n",
			s.UserConfig, names, s.S3ConfigFile)
	}
}
