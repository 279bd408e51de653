package pack

import "syscall"

// changeTimeNs is a file's status change time (ctime) in nanoseconds: Linux's field.
func changeTimeNs(st *syscall.Stat_t) uint64 { return uint64(st.Ctim.Nano()) }
