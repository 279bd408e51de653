package main

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tfk8s/tfk8s/internal/pack"
)

// cliPlatforms are the OS/architecture pairs the CLI is released for.
var cliPlatforms = []platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// platform is one GOOS/GOARCH pair.
type platform struct{ os, arch string }

// checksumsFile lists each archive's SHA-256, as sha256sum writes it: sha256sum -c
// SHA256SUMS checks a download.
const checksumsFile = "SHA256SUMS"

// archiveName is the CLI archive of one platform, e.g. tfk8s_v0.2.0_darwin_arm64.tar.gz.
func archiveName(version string, p platform) string {
	return fmt.Sprintf("tfk8s_%s_%s_%s.tar.gz", version, p.os, p.arch)
}

// buildCLI builds tfk8s for each platform, static and stamped by the ldflags, archives
// each and writes their checksums.
func buildCLI(ctx context.Context, o options) ([]artefact, error) {
	var done []artefact
	var archives []string
	for _, p := range cliPlatforms {
		bin := filepath.Join(o.buildDir(), "cli", p.os+"_"+p.arch, "tfk8s")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", o.ldflags, "-o", bin, "./cmd/tfk8s")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build ./cmd/tfk8s for %s/%s: %w\n%s", p.os, p.arch, err, out)
		}
		archive := filepath.Join(o.dir(), archiveName(o.version, p))
		size, err := writeArchive(archive, bin)
		if err != nil {
			return nil, err
		}
		archives = append(archives, archive)
		done = append(done, artefact{name: filepath.Base(archive), size: megabytes(size)})
	}
	if err := writeChecksums(filepath.Join(o.dir(), checksumsFile), archives); err != nil {
		return nil, err
	}
	return done, nil
}

// writeArchive writes a gzipped tar holding the binary bin as tfk8s, executable, with
// no owner and a zero time, so that the same binary makes the same archive; it returns
// the archive's size.
func writeArchive(archive, bin string) (int64, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return 0, err
	}
	f, err := os.Create(archive)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{Name: "tfk8s", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return 0, fmt.Errorf("writing %s: %w", archive, err)
	}
	if _, err := tw.Write(data); err != nil {
		return 0, fmt.Errorf("writing %s: %w", archive, err)
	}
	if err := tw.Close(); err != nil {
		return 0, fmt.Errorf("writing %s: %w", archive, err)
	}
	if err := zw.Close(); err != nil {
		return 0, fmt.Errorf("writing %s: %w", archive, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("writing %s: %w", archive, err)
	}
	st, err := os.Stat(archive)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// writeChecksums writes the SHA-256 of each file, by its base name, in sha256sum's
// format: "<hex>  <name>".
func writeChecksums(path string, files []string) error {
	return checksums(path, files, os.O_TRUNC)
}

// addChecksums adds the SHA-256 of each file to the checksums file at path.
func addChecksums(path string, files []string) error {
	return checksums(path, files, os.O_APPEND)
}

// checksums writes the lines of writeChecksums to path, truncated or appended to as
// mode says.
func checksums(path string, files []string, mode int) error {
	var b strings.Builder
	for _, file := range files {
		sum, err := pack.FileSHA256(file)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, filepath.Base(file))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|mode, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readChecksums reads a checksums file written by writeChecksums: name to hex SHA-256.
func readChecksums(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			return nil, fmt.Errorf("%s: line %q is not \"<sha256>  <name>\"", path, sc.Text())
		}
		sums[name] = sum
	}
	return sums, sc.Err()
}
