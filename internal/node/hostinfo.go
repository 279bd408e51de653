package node

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
)

// hostInfo is what the node reports about the machine it runs on.
type hostInfo struct {
	CPUs           int
	MemoryBytes    int64
	StorageBytes   int64
	KernelVersion  string
	OSImage        string
	MachineID      string
	BootID         string
	RuntimeVersion string
}

// readHostInfo gathers the host's capacity and identity; storage is that of the file
// system holding stateDir.
func readHostInfo(stateDir, runcPath string) (hostInfo, error) {
	info := hostInfo{CPUs: runtime.NumCPU()}
	mem, err := memTotal("/proc/meminfo")
	if err != nil {
		return info, err
	}
	info.MemoryBytes = mem
	var st unix.Statfs_t
	if err := unix.Statfs(stateDir, &st); err != nil {
		return info, fmt.Errorf("reading the size of %s: %w", stateDir, err)
	}
	info.StorageBytes = int64(st.Blocks) * st.Bsize
	var uts unix.Utsname
	if err := unix.Uname(&uts); err == nil {
		info.KernelVersion = unix.ByteSliceToString(uts.Release[:])
	}
	info.OSImage = osPrettyName("/etc/os-release")
	info.MachineID = readTrimmed("/etc/machine-id")
	info.BootID = readTrimmed("/proc/sys/kernel/random/boot_id")
	info.RuntimeVersion = runcVersion(runcPath)
	return info, nil
}

// memTotal reads MemTotal from a meminfo file, in bytes.
func memTotal(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading memory size: %w", err)
	}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing MemTotal: %w", err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no MemTotal in %s", path)
}

// osPrettyName reads PRETTY_NAME from an os-release file.
func osPrettyName(path string) string {
	data, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return runtime.GOOS
}

func readTrimmed(path string) string {
	data, _ := os.ReadFile(path)
	return strings.TrimSpace(string(data))
}

// runcVersion is the runtime as the Node reports it, "runc://1.1.5".
func runcVersion(runcPath string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, runcPath, "--version").Output()
	if err != nil {
		return "runc://unknown"
	}
	first, _, _ := strings.Cut(string(out), "\n")
	fields := strings.Fields(first)
	if len(fields) >= 3 {
		v, _, _ := strings.Cut(fields[2], "+")
		return "runc://" + v
	}
	return "runc://unknown"
}

// quantity is a byte count as a binary-SI quantity.
func quantity(bytes int64) resource.Quantity {
	return *resource.NewQuantity(bytes, resource.BinarySI)
}
