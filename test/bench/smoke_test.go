package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
)

// smoke is set by TFK8S_BENCH_SMOKE=1, as make test runs the benchmarks: each at its
// smallest size, one round, so that a benchmark that no longer runs (a panic in its
// cleanup, a flag gone from a binary) fails make test rather than the next make bench.
// Its figures mean nothing; make test checks that every benchmark ran to its end.
var smoke = os.Getenv("TFK8S_BENCH_SMOKE") != ""

// sized is full, or small in a smoke run.
func sized[T int | int32 | int64](full, small T) T {
	if smoke {
		return small
	}
	return full
}

// benchImage is what the local clusters' benchmarks run: ghcr.io/tfk8s/tensorflow, or
// in a smoke run the Python image it is built on (50 MB, not 511), whose pull would
// otherwise be most of the smoke run's time, twice.
func benchImage() string {
	if smoke {
		return images.Python
	}
	return images.TensorFlow
}

// shared is, in a smoke run, the one control plane the controller rig's benchmarks
// share: its start and the CRDs' (some 13 s on two loaded CPUs) were most of each one's
// smoke run. Each benchmark keeps to namespaces of its own and stops its controllers.
var shared struct {
	once sync.Once
	cp   *controlplane.ControlPlane
	err  error
}

// startControlPlane starts a control plane with opts for a controller rig's benchmark,
// serving kubeflow.org TFJobs too if kubeflow; stop stops it. In a smoke run it returns
// the shared one, which serves kubeflow.org TFJobs whatever is asked, and TestMain stops.
func startControlPlane(b *testing.B, opts controlplane.Options, kubeflow bool) (cp *controlplane.ControlPlane, stop func()) {
	b.Helper()
	start := func() (*controlplane.ControlPlane, error) {
		cp, err := controlplane.Start(context.Background(), opts)
		if err != nil {
			return nil, err
		}
		if kubeflow || smoke {
			if err := cp.InstallKubeflowCRD(context.Background()); err != nil {
				cp.Stop()
				return nil, fmt.Errorf("serving kubeflow.org TFJobs: %w", err)
			}
		}
		return cp, nil
	}
	if !smoke {
		cp, err := start()
		if err != nil {
			b.Fatal(err)
		}
		return cp, cp.Stop
	}
	shared.once.Do(func() { shared.cp, shared.err = start() })
	if shared.err != nil {
		b.Fatal(shared.err)
	}
	return shared.cp, func() {}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cp != nil {
		shared.cp.Stop()
	}
	if sharedCluster.opts.Dir != "" {
		if err := downBenchCluster(sharedCluster.opts); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
