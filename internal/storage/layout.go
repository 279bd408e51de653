package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The layout of what a job stores under its artifacts destination. The agent writes it
// and the CLI reads it, so both name every key through the functions below:
//
//	<destination>/<namespace>/<job>/<replica>/artifacts/<path in the container>
//	    the artifact paths, as the latest attempt left them; shared by the attempts, so
//	    that a retried replica resumes from its predecessor's checkpoints
//	<destination>/<namespace>/<job>/<replica>/attempts/<n>/logs/<container>.log
//	    the log of attempt n (1, 2, ...): a retry never overwrites an earlier one
//	<destination>/<namespace>/<job>/<replica>/attempts/<n>/attempt.json
//	    an Attempt: when attempt n ran, in which pod, and how it ended
//	<destination>/<namespace>/<job>/<replica>/manifest.json
//	    every file stored so far, of every attempt, with its size and SHA-256
//	<destination>/<namespace>/<job>/<replica>/progress.json
//	    a tfevents.Progress: the step and scalars of the event files stored so far
//	<destination>/<namespace>/<job>/<replica>/usage.json
//	    a Usage: the CPU and memory the latest attempt's container used, sampled
const (
	// ManifestName is the replica's manifest, written after the files it lists.
	ManifestName = "manifest.json"
	// AttemptRecordName is an attempt's record, in its attempt prefix.
	AttemptRecordName = "attempt.json"
	// ProgressName is the replica's progress record, rewritten as its summaries grow.
	ProgressName = "progress.json"
	// UsageName is the replica's usage record, rewritten at every upload.
	UsageName = "usage.json"
)

// JobPrefix is where a job's replicas store: <destination>/<namespace>/<job>/.
func JobPrefix(destination URI, namespace, job string) URI {
	return destination.Join(namespace, job+"/")
}

// ReplicaPrefix is where one replica (e.g. worker-1) stores.
func ReplicaPrefix(destination URI, namespace, job, replica string) URI {
	return destination.Join(namespace, job, replica+"/")
}

// ArtifactURI is where the artifact path p (absolute, in the container) is stored.
func ArtifactURI(replica URI, p string) URI {
	return replica.Join("artifacts", strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "/"))
}

// AttemptPrefix is where attempt n of a replica stores its log and record.
func AttemptPrefix(replica URI, n int) URI {
	return replica.Join("attempts", strconv.Itoa(n)+"/")
}

// AttemptLogURI is the log of a container in attempt n.
func AttemptLogURI(replica URI, n int, container string) URI {
	return AttemptPrefix(replica, n).Join("logs", container+".log")
}

// AttemptRecordURI is the record of attempt n.
func AttemptRecordURI(replica URI, n int) URI {
	return AttemptPrefix(replica, n).Join(AttemptRecordName)
}

// Attempt is one run of a replica's command: the first, or a retry after the container
// restarted or the pod was re-created. The agent writes it when the command starts and
// again when it ends.
type Attempt struct {
	// Number counts from 1.
	Number int `json:"number"`
	// Pod and PodUID name the pod it ran in.
	Pod    string `json:"pod,omitempty"`
	PodUID string `json:"podUID,omitempty"`
	// Container names the log.
	Container string `json:"container"`
	// Start is when the command started; End when it exited (nil while it runs, or when
	// the attempt was killed before it could say).
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end,omitempty"`
	// ExitCode is the command's (or the agent's, when the command could not start).
	ExitCode *int `json:"exitCode,omitempty"`
	// Reason is a CamelCase word for how it ended: Completed, Error, Signaled,
	// StorageDenied, ...; Message says more.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// DataManifest is the marker of a data set uploaded by tfk8s submit, stored beside the
// set's prefix (datasets/sha256-<digest>/ has datasets/sha256-<digest>.json): every
// file with its size and SHA-256, so that a replica fetching the set verifies it.
type DataManifest struct {
	// Digest is the set's: SHA-256 over each file's "path\x00size\x00sha256\n", in path
	// order.
	Digest   string     `json:"digest"`
	Files    []DataFile `json:"files"`
	Bytes    int64      `json:"bytes"`
	Uploaded time.Time  `json:"uploaded"`
}

// DataFile is one file of a data set, by its slash-separated path in the set.
type DataFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// DataManifestURI is the marker of the data set stored under prefix, or false when the
// prefix is not one tfk8s submit names (datasets/sha256-<hex>/).
func DataManifestURI(prefix URI) (URI, bool) {
	key := strings.TrimSuffix(prefix.Key, "/")
	base := key[strings.LastIndex(key, "/")+1:]
	if !strings.HasPrefix(base, "sha256-") || len(base) != len("sha256-")+64 || !prefix.IsPrefix() {
		return URI{}, false
	}
	return URI{Bucket: prefix.Bucket, Key: key + ".json"}, true
}

// DataSetDigest is the digest of a data set with these files, as DataManifest.Digest
// defines it; the files are taken in path order whatever their order here.
func DataSetDigest(files []DataFile) string {
	sorted := slices.SortedFunc(slices.Values(files), func(a, b DataFile) int { return strings.Compare(a.Path, b.Path) })
	h := sha256.New()
	for _, f := range sorted {
		fmt.Fprintf(h, "%s\x00%d\x00%s\n", f.Path, f.Size, f.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Manifest lists what a replica has stored: every artifact and log file uploaded by any
// of its attempts, with its size and SHA-256, and the attempts. The agent writes it
// after the files it lists, so it never names a file not yet stored; the CLI reads it.
type Manifest struct {
	Namespace string `json:"namespace"`
	Job       string `json:"job"`
	Replica   string `json:"replica"`
	Container string `json:"container"`
	// Final is true once the command has exited and the last upload is done.
	Final bool `json:"final"`
	// ExitCode is the command's, once it has exited.
	ExitCode *int `json:"exitCode,omitempty"`
	// Updated is when the manifest was written.
	Updated time.Time `json:"updated"`
	// Files are in key order.
	Files []ManifestFile `json:"files"`
	// Attempts are the replica's attempts known so far, oldest first, the latest last.
	Attempts []Attempt `json:"attempts"`
}

// ManifestFile is one stored file.
type ManifestFile struct {
	// Path is the file's path in the container.
	Path string `json:"path"`
	// Key is its object key, in the destination's bucket.
	Key    string `json:"key"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ErrBadManifest is a manifest that does not parse: written by something else.
var ErrBadManifest = errors.New("not a tfk8s manifest")

// ReadManifest reads the manifest of the replica stored under the prefix replica; an
// error wrapping ErrNotFound when it has none, ErrBadManifest when it does not parse.
func ReadManifest(ctx context.Context, c *Client, replica URI) (*Manifest, error) {
	var buf bytes.Buffer
	u := replica.Join(ManifestName)
	if _, err := c.Download(ctx, u, &buf); err != nil {
		return nil, fmt.Errorf("reading the manifest: %w", err)
	}
	m := &Manifest{}
	if err := json.Unmarshal(buf.Bytes(), m); err != nil {
		return nil, fmt.Errorf("reading the manifest %s: %w: %v", u, ErrBadManifest, err)
	}
	return m, nil
}
