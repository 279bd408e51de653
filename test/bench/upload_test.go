// Package bench measures tfk8s against a real control plane and a real S3 server.
// This file measures the code path of `tfk8s submit`: packing a directory into its
// content-addressed archive and uploading it, against raw minio-go uploads of the same
// bytes, and the bytes an unchanged re-submit uploads.
package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
)

// BenchmarkPackUpload1GiB packs and uploads a directory holding one 1 GiB file of
// random (incompressible) bytes, like a vocabulary or pre-trained weights shipped with
// the code.
func BenchmarkPackUpload1GiB(b *testing.B) {
	dir := b.TempDir()
	size := sized[int64](1<<30, 16<<20)
	writeRandomFile(b, filepath.Join(dir, "weights.bin"), size)
	benchmarkPackUpload(b, dir, size)
}

// BenchmarkPackUpload10kFiles packs and uploads 10,000 files of 4 KiB, a source tree
// with many small files.
func BenchmarkPackUpload10kFiles(b *testing.B) {
	dir := b.TempDir()
	files := sized(10_000, 100)
	for i := range files {
		writeRandomFile(b, filepath.Join(dir, fmt.Sprintf("pkg%02d", i%100), fmt.Sprintf("mod%04d.py", i)), 4<<10)
	}
	benchmarkPackUpload(b, dir, int64(files)*4<<10)

	// A naive tool would upload each file as its own object.
	srv, mc := benchServer(b)
	start := time.Now()
	uploadEachFile(b, mc, srv.Bucket, dir)
	perFile := time.Since(start)
	b.ReportMetric(perFile.Seconds(), "s-raw-per-file")
}

// benchmarkPackUpload measures, for the files under dir (size bytes in all):
//   - ratio-vs-raw: the throughput of pack + upload of the archive relative to one raw
//     minio-go PutObject of size bytes (1 = as fast as raw, lower is slower);
//   - resubmit-bytes: what a second submit of the unchanged tree uploads.
func benchmarkPackUpload(b *testing.B, dir string, size int64) {
	srv, mc := benchServer(b)
	client := srv.Client(b)
	ctx := context.Background()
	tmp := b.TempDir()
	raw := filepath.Join(tmp, "raw.bin")
	concatenate(b, dir, raw) // the same bytes as one file, for the raw upload

	var rawTime, packTime, uploadTime time.Duration
	var resubmitBytes, archiveSize int64
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		f, err := os.Open(raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := mc.PutObject(ctx, srv.Bucket, fmt.Sprintf("raw/%d", i), f, size, minio.PutObjectOptions{}); err != nil {
			b.Fatal(err)
		}
		f.Close()
		rawTime += time.Since(start)

		start = time.Now()
		archive, sent := submit(b, client, srv.Bucket, dir, fmt.Sprintf("code/%d", i), tmp)
		packTime += archive.packTime
		uploadTime += time.Since(start) - archive.packTime
		archiveSize = sent

		_, resubmitBytes = submit(b, client, srv.Bucket, dir, fmt.Sprintf("code/%d", i), tmp)
	}
	b.StopTimer()
	b.ReportMetric(rawTime.Seconds()/(packTime+uploadTime).Seconds(), "ratio-vs-raw")
	b.ReportMetric(float64(resubmitBytes), "resubmit-bytes")
	b.ReportMetric(float64(archiveSize), "archive-bytes")
	n := float64(b.N)
	b.ReportMetric(rawTime.Seconds()/n, "s-raw")
	b.ReportMetric(packTime.Seconds()/n, "s-pack")
	b.ReportMetric(uploadTime.Seconds()/n, "s-upload")
}

// packed is an archive submitted, with the time packing took.
type packed struct {
	pack.Archive
	packTime time.Duration
}

// submit does what `tfk8s submit` does with the code: pack, and upload the archive
// unless its content-addressed key is already stored. It returns the bytes sent.
func submit(b *testing.B, c *storage.Client, bucket, dir, prefix, tmp string) (packed, int64) {
	ctx := context.Background()
	start := time.Now()
	a, err := pack.Pack(dir, tmp)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Remove()
	p := packed{Archive: a, packTime: time.Since(start)}
	dst := storage.URI{Bucket: bucket, Key: a.Key(prefix)}
	exists, err := c.Exists(ctx, dst)
	if err != nil {
		b.Fatal(err)
	}
	if exists {
		return p, 0
	}
	var sent int64
	err = c.UploadFile(ctx, a.Path, dst, storage.UploadOptions{SHA256: a.SHA256, Progress: func(done, _ int64) { sent = done }})
	if err != nil {
		b.Fatal(err)
	}
	return p, sent
}

// benchServer starts an S3 server for one benchmark.
func benchServer(b *testing.B) (*s3server.Server, *minio.Client) {
	srv := s3server.Start(b)
	return srv, srv.MinioClient()
}

// writeRandomFile writes size pseudo-random bytes to name.
func writeRandomFile(b *testing.B, name string, size int64) {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var seed [32]byte
	copy(seed[:], name[max(0, len(name)-32):]) // distinct files, distinct bytes
	src := rand.NewChaCha8(seed)
	if _, err := io.CopyN(f, src, size); err != nil {
		b.Fatal(err)
	}
}

// concatenate writes every file under dir, one after the other, to out.
func concatenate(b *testing.B, dir, out string) {
	w, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		r, err := os.Open(p)
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = io.Copy(w, r)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// uploadEachFile uploads every file under dir as its own object, four at a time.
func uploadEachFile(b *testing.B, mc *minio.Client, bucket, dir string) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	work := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 4 {
		wg.Go(func() {
			for p := range work {
				rel, _ := filepath.Rel(dir, p)
				if _, err := mc.FPutObject(context.Background(), bucket, "files/"+filepath.ToSlash(rel), p, minio.PutObjectOptions{}); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		})
	}
	for _, p := range paths {
		work <- p
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}
