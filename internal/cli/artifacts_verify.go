package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// verification is what artifacts get found comparing the files it downloaded with the
// replicas' manifests.
type verification struct {
	// verified counts the files whose size and SHA-256 are the manifest's.
	verified int
	// problems name each file that is missing or differs, by its path under the job.
	problems []string
	// unverified are replicas with files but no manifest to check them against.
	unverified []string
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

// verify checks every file that the replicas' manifests list under what was
// downloaded into dir: present, of the listed size and SHA-256.
func (f *jobFiles) verify(ctx context.Context, dir string) (verification, error) {
	d, err := f.downloadedTo(ctx, dir)
	if err != nil {
		return verification{}, err
	}
	replicas, unverified, err := f.replicasUnder(ctx)
	if err != nil {
		return verification{}, err
	}
	manifests := make([]*storage.Manifest, len(replicas))
	errs := make([]error, len(replicas))
	jobs.Parallel(len(replicas), jobs.MaxParallelReads, func(i int) {
		manifests[i], errs[i] = storage.ReadManifest(ctx, f.s3, f.base.Join(replicas[i]+"/"))
	})
	v := verification{unverified: unverified}
	var checks []func() string
	for i, m := range manifests {
		switch {
		case errors.Is(errs[i], storage.ErrNotFound):
			v.unverified = append(v.unverified, replicas[i])
			continue
		case errs[i] != nil:
			return verification{}, fmt.Errorf("verifying replica %s: %w", replicas[i], errs[i])
		}
		for _, file := range m.Files {
			if local, ok := d.localPath(file.Key); ok {
				name := strings.TrimPrefix(file.Key, f.base.Key)
				checks = append(checks, func() string { return checkFile(local, name, file) })
			}
		}
	}
	problems := make([]string, len(checks))
	jobs.Parallel(len(checks), 4, func(i int) { problems[i] = checks[i]() })
	for _, p := range problems {
		if p == "" {
			v.verified++
		} else {
			v.problems = append(v.problems, p)
		}
	}
	slices.Sort(v.problems)
	slices.Sort(v.unverified)
	v.unverified = slices.Compact(v.unverified)
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
	sum, err := storage.FileSHA256(local)
	if err != nil {
		return fmt.Sprintf("incomplete: %s: %v", name, err)
	}
	if sum != want.SHA256 {
		return fmt.Sprintf("mismatched: %s: SHA-256 %s, the manifest says %s", name, sum, want.SHA256)
	}
	return ""
}

// downloadedTo says where DownloadPrefix put the objects of f.at: a prefix maps to
// dir, one object to dir/<its base name>.
func (f *jobFiles) downloadedTo(ctx context.Context, dir string) (downloaded, error) {
	if f.at.IsPrefix() {
		return downloaded{dir: dir, prefix: f.at}, nil
	}
	_, err := f.s3.Stat(ctx, f.at)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return downloaded{dir: dir, prefix: f.at.Dir()}, nil
	case err != nil:
		return downloaded{}, fmt.Errorf("verifying %s: %w", f.at, err)
	}
	parent := f.at.Key[:strings.LastIndex(f.at.Key, "/")+1]
	return downloaded{dir: dir, prefix: storage.URI{Bucket: f.at.Bucket, Key: parent}, single: f.at.Key}, nil
}

// replicasUnder names the replicas whose manifests cover f.at: the one PATH starts
// with, or, for the whole job, each that stored a manifest. A replica with files but
// no manifest is returned apart, as unverified.
func (f *jobFiles) replicasUnder(ctx context.Context) (replicas, unverified []string, err error) {
	if rel := strings.TrimPrefix(f.at.Key, f.base.Key); rel != "" {
		replica, _, _ := strings.Cut(rel, "/")
		return []string{replica}, nil, nil
	}
	objs, err := f.s3.List(ctx, f.base)
	if err != nil {
		return nil, nil, fmt.Errorf("verifying: %w", err)
	}
	seen := map[string]bool{}
	for _, obj := range objs {
		replica, rest, _ := strings.Cut(strings.TrimPrefix(obj.URI.Key, f.base.Key), "/")
		seen[replica] = seen[replica] || rest == storage.ManifestName
	}
	for replica, hasManifest := range seen {
		if hasManifest {
			replicas = append(replicas, replica)
		} else {
			unverified = append(unverified, replica)
		}
	}
	slices.SortFunc(replicas, jobs.CompareReplicas)
	return replicas, unverified, nil
}

// report writes what the verification found (what is wrong to w) and returns an error if a file is
// missing or differs.
func (v verification) report(out, w io.Writer, running bool) error {
	for _, r := range v.unverified {
		fmt.Fprintf(w, "unverified: %s: stored no manifest to check its files against\n", r)
	}
	if len(v.problems) == 0 {
		fmt.Fprintf(out, "%d files verified against the replicas' manifests\n", v.verified)
		return nil
	}
	for _, p := range v.problems {
		fmt.Fprintln(w, p)
	}
	hint := ""
	if running {
		hint = " (the job is running: its agents may be storing newer versions; get again once it finished)"
	}
	return fmt.Errorf("%d of %d files listed in the manifests are incomplete or mismatched%s",
		len(v.problems), len(v.problems)+v.verified, hint)
}
