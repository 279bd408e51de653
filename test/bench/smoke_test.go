package bench

import "os"

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
