package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
)

const (
	// gpuNotice is the line the CUDA image prints when its container has no GPU.
	gpuNotice = "tfk8s: no GPU visible to this container; TensorFlow runs on the CPU"
	// gpuJobDisk is what the CUDA image takes in a cluster, with 1 GiB to spare: the
	// registry's copy (4.1 GB compressed), containerd's copy of the same blobs, and the
	// unpacked snapshot (6.6 GB), 14.6-15.0 GB measured.
	gpuJobDisk = 16 << 30
	// gpuPullDisk is what is still to come when the job is submitted, the registry's
	// copy being in place: containerd's copy of the blobs (3.9 GiB) and the unpacked
	// snapshot, 9.7-10.5 GiB measured together, with 1.5 GiB to spare. Less, and the
	// pull can fill the disk: ErrImagePull until gpuJobWait is up, or etcd failing.
	gpuPullDisk = 12 << 30
	// gpuJobWait bounds the wait for the job: its node pulls 4.1 GB and unpacks 6.6 GB
	// on two shared cores before TensorFlow imports.
	gpuJobWait = 10 * time.Minute
	// gpuLoadWait bounds the wait for the load, which took 16-19 s and started six
	// subtests before the job.
	gpuLoadWait = 3 * time.Minute
)

// gpuJobScript is the job's program: the dynamic loader's view of the CUDA libraries,
// that each file it resolves is present, then TensorFlow on whatever devices it finds.
const gpuJobScript = `set -e
ldconfig -p
for f in $(ldconfig -p | sed -n 's/^\s*\(libcudart\.so\.12\|libcudnn\.so\.9\) (libc6,x86-64) => //p'); do
  test -f "$f" && echo "present $f"
done
exec python3 -c "import tensorflow as tf; print('GPUs', tf.config.list_physical_devices('GPU')); print('sum', float(tf.reduce_sum(tf.ones([2, 2]))))"
`

// gpuLoad is the load of the CUDA image into the cluster's registry, under way.
type gpuLoad struct {
	done  chan struct{}
	err   error
	start time.Time
	took  time.Duration
	// read is whether the CUDA job has seen err: if not (-run left it out, or its
	// wait ran out), the cleanup reports it.
	read bool
}

// startGPULoad loads the CUDA image into the cluster's registry while the suite's
// other jobs run: its 16-19 s are mostly I/O, which TensorFlow's CPU-bound jobs leave
// free. Not enough disk is an error for the CUDA job alone, which it then waits for.
// The load ends before the cluster goes down.
func startGPULoad(ctx context.Context, t *testing.T, opts localcluster.Options, binDir string) *gpuLoad {
	l := &gpuLoad{done: make(chan struct{}), start: time.Now()}
	if free := freeDisk(t, opts.Dir); free < gpuJobDisk {
		l.err = fmt.Errorf("%s has %.1f GiB free; a job in the CUDA image needs %.0f GiB there (the registry's copy, containerd's and the unpacked image)",
			opts.Dir, gib(free), gib(gpuJobDisk))
		close(l.done)
		return l
	}
	dir := filepath.Join(binDir, "..", "_out", "images", "tensorflow-gpu")
	go func() {
		defer close(l.done)
		var out bytes.Buffer
		// Named here, not by the layout's annotation: under any other name the node
		// would look for the job's image on ghcr.io, or wait for it until the job's
		// time is up.
		if err := localcluster.Load(ctx, opts, []string{dir}, images.TensorFlowGPU, &out); err != nil {
			l.err = fmt.Errorf("local load %s: %w\n%s", dir, err, out.String())
			return
		}
		l.took = time.Since(l.start)
		t.Logf("local load of the CUDA image, %.1f s:\n%s", l.took.Seconds(), out.String())
	}()
	t.Cleanup(func() {
		<-l.done
		// Canceled: the suite ended before the load, which is its own error.
		if l.err != nil && !l.read && !errors.Is(l.err, context.Canceled) {
			t.Error(l.err)
		}
	})
	return l
}

// testGPUJob runs a job in the CUDA image, once load has put it in the cluster's
// registry, on this host, which has no GPU: the dynamic loader finds libcudart and
// libcudnn in the image's nvidia packages, TensorFlow says once, before it computes,
// that no GPU is visible, and computes on the CPU.
//
// The job names the image and asks for no GPU (--gpus would pick the same image): the
// node advertises no nvidia.com/gpu, so a replica asking for one would never be
// scheduled, and the point is that the image runs where there is none.
func testGPUJob(ctx context.Context, t *testing.T, c *jobsCluster, load *gpuLoad) {
	start := time.Now()
	select {
	case <-load.done:
	case <-time.After(gpuLoadWait):
		t.Fatalf("the local load of the CUDA image has not ended %.0f s after it started (%.0f s waited for here)",
			time.Since(load.start).Seconds(), time.Since(start).Seconds())
	}
	load.read = true
	if load.err != nil {
		t.Fatal(load.err)
	}
	t.Logf("local load of the CUDA image: %.1f s, %.1f s of it waited for here", load.took.Seconds(), time.Since(start).Seconds())

	// The suite's jobs since the load (the tour pulls the Jupyter image) may have
	// taken what the check before it left spare.
	start, free := time.Now(), freeDisk(t, c.dir)
	if free < gpuPullDisk {
		t.Fatalf("%s has %.1f GiB free; the node's pull of the CUDA image needs %.0f GiB there (containerd's copy and the unpacked image): %.1f GiB short",
			c.dir, gib(free), gib(gpuPullDisk), gib(gpuPullDisk-free))
	}
	c.mustTfk8s(ctx, t, "submit", "--name", "cuda", "--image", images.TensorFlowGPU, "--workers", "1",
		"--", "sh", "-c", gpuJobScript)
	long := *c
	long.wait = gpuJobWait
	_, logs := waitSucceeded(ctx, t, &long, "cuda")
	t.Logf("cuda succeeded %.1f s after submit (the node pulled and unpacked the image, taking %.1f GiB)",
		time.Since(start).Seconds(), gib(free)-gib(freeDisk(t, c.dir)))
	checkGPUJobLogs(t, logs)
}

// checkGPUJobLogs checks what the job printed: each CUDA library resolved by the
// loader to a file of the image's nvidia packages, present; the notice once, as
// Python's first line; and TensorFlow's computation, on no GPU.
func checkGPUJobLogs(t *testing.T, logs string) {
	t.Helper()
	for _, lib := range []string{"libcudart.so.12", "libcudnn.so.9"} {
		m := regexp.MustCompile(`\s` + regexp.QuoteMeta(lib) + ` \(libc6,x86-64\) => (\S+)\n`).FindStringSubmatch(logs)
		switch {
		case m == nil:
			t.Errorf("ldconfig -p in the job finds no %s:\n%s", lib, logs)
		case !strings.Contains(m[1], "-packages/nvidia/"):
			t.Errorf("ldconfig -p finds %s at %s, outside the image's nvidia packages", lib, m[1])
		case !strings.Contains(logs, "present "+m[1]+"\n"):
			t.Errorf("ldconfig -p finds %s at %s, which the container does not hold:\n%s", lib, m[1], logs)
		}
	}
	if strings.Count(logs, gpuNotice) != 1 {
		t.Errorf("the job's logs hold %q %d times, want once:\n%s", gpuNotice, strings.Count(logs, gpuNotice), logs)
	} else if !regexp.MustCompile(`\] present \S+\n[^\n]*` + regexp.QuoteMeta(gpuNotice) + `\n`).MatchString(logs) {
		// Python's first line: the notice comes before anything the program prints.
		t.Errorf("the notice is not the first line python3 printed, right after the shell's:\n%s", logs)
	}
	for _, want := range []string{"GPUs []", "sum 4.0"} {
		if !strings.Contains(logs, "] "+want+"\n") {
			t.Errorf("TensorFlow in the CUDA image printed no %q:\n%s", want, logs)
		}
	}
}

// freeDisk is how many bytes the file system holding dir has free for an ordinary
// user, which is what the cluster's processes can count on: root may have a reserve
// beyond it. Linux counts f_bavail in fragments (f_frsize), not f_bsize.
func freeDisk(t *testing.T, dir string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Bavail * uint64(st.Frsize)
}

// gib is n bytes in GiB.
func gib(n uint64) float64 { return float64(n) / (1 << 30) }
