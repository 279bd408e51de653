package localcluster

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/tfk8s/tfk8s/internal/localnode"
	"github.com/tfk8s/tfk8s/internal/localnode/gpus"
	"github.com/tfk8s/tfk8s/internal/nvml"
)

// assignRealGPUs enumerates the host's GPUs through binDir's tfk8s-nvml and gives
// node i those whose NVML index, modulo the number of nodes, is i: each GPU belongs
// to one node, whose kubelet alone allocates it.
func assignRealGPUs(ctx context.Context, binDir string, configs []localnode.Config) error {
	devs, err := gpus.RealDevices(ctx, filepath.Join(binDir, nvml.Command))
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		return errors.New("--real-gpus: NVML lists no GPU on this host")
	}
	for i, d := range devs {
		n := &configs[i%len(configs)]
		n.RealGPUs = append(n.RealGPUs, d)
	}
	return nil
}
