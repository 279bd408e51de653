package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// Files are where a job's files are in S3.
type Files struct {
	Job             *tfv1.TFJob // nil once the job is deleted
	Namespace, Name string
	// Base is the job's prefix, <destination>/<namespace>/<job>/; At is the part of
	// it a path names, Base itself without one.
	Base, At storage.URI
	S3       *storage.Client
}

// Locate finds the files of job name, in the namespace of cs, under path if given.
func (o Storage) Locate(ctx context.Context, cs *Clients, name, path string) (*Files, error) {
	job, base, c, err := o.JobFiles(ctx, cs, name)
	if err != nil {
		return nil, err
	}
	at := base
	if path != "" {
		at = base.Join(strings.TrimPrefix(path, "/"))
	}
	return &Files{Job: job, Namespace: cs.Namespace, Name: name, Base: base, At: at, S3: c}, nil
}

// None says that S3 has nothing where asked, and that the job does not exist if it
// is gone.
func (f *Files) None() error {
	if f.Job == nil {
		return fmt.Errorf("%w, and S3 has no files of it under %s", &NotFoundError{Namespace: f.Namespace, Name: f.Name}, f.At)
	}
	return fmt.Errorf("no files of tfjob %s under %s", f.Name, f.At)
}

// Verification is what comparing downloaded files with the replicas' manifests
// found, as tfk8s artifacts get reports it.
type Verification struct {
	// Verified counts the files whose size and SHA-256 are the manifest's.
	Verified int
	// Problems name each file that is missing or differs, by its path under the job.
	Problems []string
	// Unverified are replicas with files but no manifest to check them against.
	Unverified []string
}

// downloaded says which files a download of src into dir wrote, as DownloadPrefix
// lays them out: the objects under prefix, or the one object single.
type downloaded struct {
	dir    string
	prefix storage.URI
	single string
}

// localPath is where the object key landed, or false if the download did not cover it.
func (d downloaded) localPath(key string) (string, bool) {
	if d.single != "" && key != d.single {
		return "", false
	}
	rel, ok := strings.CutPrefix(key, d.prefix.Key)
	if !ok || rel == "" {
		return "", false
	}
	return filepath.Join(d.dir, filepath.FromSlash(rel)), true
}

// Verify checks every file that the replicas' manifests list under what was
// downloaded into dir: present, of the listed size and SHA-256.
func (f *Files) Verify(ctx context.Context, dir string) (Verification, error) {
	d, err := f.downloadedTo(ctx, dir)
	if err != nil {
		return Verification{}, err
	}
	replicas, unverified, err := f.replicasUnder(ctx)
	if err != nil {
		return Verification{}, err
	}
	manifests := make([]*storage.Manifest, len(replicas))
	errs := make([]error, len(replicas))
	Parallel(len(replicas), MaxParallelReads, func(i int) {
		manifests[i], errs[i] = storage.ReadManifest(ctx, f.S3, f.Base.Join(replicas[i]+"/"))
	})
	v := Verification{Unverified: unverified}
	var checks []func() string
	for i, m := range manifests {
		switch {
		case errors.Is(errs[i], storage.ErrNotFound):
			v.Unverified = append(v.Unverified, replicas[i])
			continue
		case errs[i] != nil:
			return Verification{}, fmt.Errorf("verifying replica %s: %w", replicas[i], errs[i])
		}
		for _, file := range m.Files {
			if local, ok := d.localPath(file.Key); ok {
				name := strings.TrimPrefix(file.Key, f.Base.Key)
				checks = append(checks, func() string { return checkFile(local, name, file) })
			}
		}
	}
	problems := make([]string, len(checks))
	Parallel(len(checks), 4, func(i int) { problems[i] = checks[i]() })
	for _, p := range problems {
		if p == "" {
			v.Verified++
		} else {
			v.Problems = append(v.Problems, p)
		}
	}
	slices.Sort(v.Problems)
	slices.Sort(v.Unverified)
	v.Unverified = slices.Compact(v.Unverified)
	return v, nil
}

// checkFile compares a downloaded file with its manifest entry; "" when they agree,
// else what is wrong, naming the file.
func checkFile(local, name string, want storage.ManifestFile) string {
	st, err := os.Stat(local)
	if err != nil {
		return fmt.Sprintf("incomplete: %s: listed in the manifest (%d bytes), not downloaded", name, want.Size)
	}
	if st.Size() != want.Size {
		return fmt.Sprintf("mismatched: %s: %d bytes, the manifest says %d", name, st.Size(), want.Size)
	}
	sum, err := pack.FileSHA256(local)
	if err != nil {
		return fmt.Sprintf("incomplete: %s: %v", name, err)
	}
	if sum != want.SHA256 {
		return fmt.Sprintf("mismatched: %s: SHA-256 %s, the manifest says %s", name, sum, want.SHA256)
	}
	return ""
}

// downloadedTo says where DownloadPrefix put the objects of f.At: a prefix maps to
// dir, one object to dir/<its base name>.
func (f *Files) downloadedTo(ctx context.Context, dir string) (downloaded, error) {
	if f.At.IsPrefix() {
		return downloaded{dir: dir, prefix: f.At}, nil
	}
	_, err := f.S3.Stat(ctx, f.At)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return downloaded{dir: dir, prefix: f.At.Dir()}, nil
	case err != nil:
		return downloaded{}, fmt.Errorf("verifying %s: %w", f.At, err)
	}
	parent := f.At.Key[:strings.LastIndex(f.At.Key, "/")+1]
	return downloaded{dir: dir, prefix: storage.URI{Bucket: f.At.Bucket, Key: parent}, single: f.At.Key}, nil
}

// replicasUnder names the replicas whose manifests cover f.At: the one PATH starts
// with, or, for the whole job, each that stored a manifest. A replica with files but
// no manifest is returned apart, as unverified.
func (f *Files) replicasUnder(ctx context.Context) (replicas, unverified []string, err error) {
	if rel := strings.TrimPrefix(f.At.Key, f.Base.Key); rel != "" {
		replica, _, _ := strings.Cut(rel, "/")
		return []string{replica}, nil, nil
	}
	objs, err := f.S3.List(ctx, f.Base)
	if err != nil {
		return nil, nil, fmt.Errorf("verifying: %w", err)
	}
	seen := map[string]bool{}
	for _, obj := range objs {
		replica, rest, isDir := strings.Cut(strings.TrimPrefix(obj.URI.Key, f.Base.Key), "/")
		if !isDir || storage.IsRunID(replica) {
			continue // the run's records, or the runs under a job's prefix read as a run
		}
		seen[replica] = seen[replica] || rest == storage.ManifestName
	}
	for replica, hasManifest := range seen {
		if hasManifest {
			replicas = append(replicas, replica)
		} else {
			unverified = append(unverified, replica)
		}
	}
	slices.SortFunc(replicas, CompareReplicas)
	return replicas, unverified, nil
}
