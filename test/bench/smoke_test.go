package bench

import (
	"os"

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
