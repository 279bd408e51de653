// Command tfk8s-nvml reads NVIDIA GPUs through NVML for tfk8s's static binaries,
// which cannot load a library themselves (see package internal/nvml).
//
//	tfk8s-nvml devices [--library PATH]
//	    the GPUs this process sees, as a JSON array of {index, minor, uuid, name}
//	tfk8s-nvml sample [--library PATH] [--interval 2s]
//	    one JSON line {"gpus": [{index, utilizationPercent, memoryUsedBytes,
//	    memoryTotalBytes}]} per interval, until its standard input closes
//
// It exits 3 where NVML cannot be loaded, 4 where it sees no GPU, saying why on
// standard error: the agent and the device plugin then go on without GPU figures.
package main

import (
	"os"

	"github.com/tfk8s/tfk8s/internal/nvml/nvmlcmd"
)

func main() {
	os.Exit(nvmlcmd.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
