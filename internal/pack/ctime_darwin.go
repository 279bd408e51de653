package pack

import "syscall"

// changeTimeNs is a file's status change time (ctime) in nanoseconds: macOS's field,
// so that the CLI released for macOS fingerprints trees as Linux's does.
func changeTimeNs(st *syscall.Stat_t) uint64 { return uint64(st.Ctimespec.Nano()) }
