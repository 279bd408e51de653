package agent

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupSample is one reading of the container's cgroup.
type cgroupSample struct {
	cpuSeconds float64
	// workingSet is the memory charged less the inactive page cache.
	workingSet int64
	// highWater is the kernel's peak of the memory charged; 0 where it keeps none.
	highWater int64
	// limit is the memory limit; 0 for none.
	limit    int64
	oomKills int
}

// cgroupReader reads the agent's own cgroup, which is its container's: the agent is
// the container's first process, and its command runs beside it.
type cgroupReader struct {
	version int // 1 or 2
	// cpuDir and memDir are the cgroup's directories; one and the same in v2.
	cpuDir, memDir string
}

// noLimit is a limit above which cgroup v1 means "none" (it writes the largest page
// multiple below 2^63).
const noLimit = 1 << 62

// findCgroup finds the cgroup that procCgroup (the /proc/self/cgroup file) names under
// mount (/sys/fs/cgroup). A container usually sees its own cgroup as the root of the
// mount, whatever path the file gives; a host sees the path. A hybrid host has v1's
// memory controller and an empty v2 hierarchy: v1 is read where it has memory.
func findCgroup(procCgroup, mount string) (*cgroupReader, error) {
	b, err := os.ReadFile(procCgroup)
	if err != nil {
		return nil, fmt.Errorf("finding the container's cgroup: %w", err)
	}
	var v1Mem, v1CPU, v1CPUDir, v2 string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		id, rest, ok1 := strings.Cut(line, ":")
		ctrls, path, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			continue
		}
		if id == "0" && ctrls == "" {
			v2 = path
		}
		for _, c := range strings.Split(ctrls, ",") {
			switch c {
			case "memory":
				v1Mem = path
			case "cpuacct":
				v1CPU, v1CPUDir = path, ctrls
			}
		}
	}
	switch {
	case v1Mem != "":
		r := &cgroupReader{version: 1}
		r.memDir = firstWith(mount, []string{"memory"}, v1Mem, "memory.usage_in_bytes")
		r.cpuDir = firstWith(mount, []string{v1CPUDir, "cpuacct", "cpu,cpuacct"}, v1CPU, "cpuacct.usage")
		if r.memDir == "" || r.cpuDir == "" {
			return nil, fmt.Errorf("finding the container's cgroup: no v1 memory and cpuacct files under %s", mount)
		}
		return r, nil
	case v2 != "":
		dir := firstWith(mount, []string{""}, v2, "memory.current")
		if dir == "" {
			return nil, fmt.Errorf("finding the container's cgroup: no v2 memory.current under %s", mount)
		}
		return &cgroupReader{version: 2, cpuDir: dir, memDir: dir}, nil
	}
	return nil, fmt.Errorf("finding the container's cgroup: %s names no memory cgroup", procCgroup)
}

// firstWith returns the first of mount/sub/path and mount/sub, for each sub, that has
// the file; "" if none does.
func firstWith(mount string, subs []string, path, file string) string {
	for _, sub := range subs {
		if sub == "" && len(subs) > 1 {
			continue
		}
		for _, dir := range []string{filepath.Join(mount, sub, path), filepath.Join(mount, sub)} {
			if _, err := os.Stat(filepath.Join(dir, file)); err == nil {
				return dir
			}
		}
	}
	return ""
}

// source names the version for the record.
func (r *cgroupReader) source() string { return "cgroup v" + strconv.Itoa(r.version) }

// read takes one sample.
func (r *cgroupReader) read() (cgroupSample, error) {
	if r.version == 1 {
		return r.readV1()
	}
	return r.readV2()
}

// readV1 reads cgroup v1's files (the kernel's cgroup-v1/memory and cpuacct docs).
func (r *cgroupReader) readV1() (cgroupSample, error) {
	var s cgroupSample
	mem := func(f string) string { return filepath.Join(r.memDir, f) }
	usage, err := readInt(mem("memory.usage_in_bytes"))
	stat, err2 := readKeyed(mem("memory.stat"))
	inactive, ok := stat["total_inactive_file"] // with its children's
	if !ok {
		inactive = stat["inactive_file"]
	}
	s.workingSet = max(0, usage-inactive)
	s.highWater, _ = readInt(mem("memory.max_usage_in_bytes"))
	if limit, err := readInt(mem("memory.limit_in_bytes")); err == nil && limit < noLimit {
		s.limit = limit
	}
	if oom, err := readKeyed(mem("memory.oom_control")); err == nil {
		s.oomKills = int(oom["oom_kill"]) // kernels before 4.13 do not count
	}
	// The CPU count last, right before the caller stamps the sample.
	ns, err3 := readInt(filepath.Join(r.cpuDir, "cpuacct.usage"))
	s.cpuSeconds = float64(ns) / 1e9
	return s, errors.Join(err, err2, err3)
}

// readV2 reads cgroup v2's files (the kernel's cgroup-v2 doc).
func (r *cgroupReader) readV2() (cgroupSample, error) {
	var s cgroupSample
	file := func(f string) string { return filepath.Join(r.memDir, f) }
	usage, err := readInt(file("memory.current"))
	stat, err2 := readKeyed(file("memory.stat"))
	s.workingSet = max(0, usage-stat["inactive_file"])
	s.highWater, _ = readInt(file("memory.peak")) // Linux 5.19 and later
	if b, err := os.ReadFile(file("memory.max")); err == nil && strings.TrimSpace(string(b)) != "max" {
		s.limit, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	if events, err := readKeyed(file("memory.events")); err == nil {
		s.oomKills = int(events["oom_kill"])
	}
	// The CPU count last, right before the caller stamps the sample.
	cpu, err3 := readKeyed(filepath.Join(r.cpuDir, "cpu.stat"))
	s.cpuSeconds = float64(cpu["usage_usec"]) / 1e6
	return s, errors.Join(err, err2, err3)
}

// readInt reads a file of one integer.
func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return n, nil
}

// readKeyed reads a file of "key value" lines; lines of another shape are skipped.
func readKeyed(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); ok && err == nil {
			out[k] = n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, nil
}
