package agent

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/tfk8s/tfk8s/internal/nvml"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// startGPUSampler runs tfk8s-nvml, installed beside the agent, to read the GPUs the
// container sees at every usage sample; nil where it is not installed. A container
// without NVIDIA's library is the common case and says nothing; one whose NVML
// loads and reads no GPU says why in one line, since a GPU job without figures is
// worth a look. start (reaper.startSampler) starts it through the reaper, which would
// otherwise collect its status before the sampler could read it. The returned stop
// ends the command and returns once anything it had to say is said.
func startGPUSampler(start nvml.Starter, cmd string, interval time.Duration, log *logger) (s *nvml.Sampler, stop func()) {
	if cmd == "" {
		return nil, func() {}
	}
	s, err := nvml.StartSampler(start, cmd, interval)
	if err != nil {
		// An image without the C library's loader cannot run tfk8s-nvml, nor have
		// NVIDIA's driver libraries: as quiet as a container without them.
		if !errors.Is(err, fs.ErrNotExist) {
			log.Printf("no GPU figures: %v", err)
		}
		return nil, func() {}
	}
	said := make(chan struct{})
	go func() {
		defer close(said)
		<-s.Done()
		if err := s.Err(); err != nil && !errors.Is(err, nvml.ErrNoLibrary) {
			log.Printf("%v", err)
		}
	}()
	return s, func() { s.Stop(); <-said }
}

// startSampler starts tfk8s-nvml (cmd) through the reaper as the command is started:
// without the storage credentials in its environment and without CAP_SYS_PTRACE. It
// is dynamically linked and loads the loader, the C library and NVML from the user's
// image, honouring LD_PRELOAD: code of the user's may run in it.
func (r *reaper) startSampler(cmd *exec.Cmd) (<-chan syscall.WaitStatus, error) {
	cmd.Env = commandEnv(os.Environ(), false)
	var exited <-chan syscall.WaitStatus
	done := make(chan struct{}) // the confined thread lives until the sampler ends
	_, err := startConfined(func(c *exec.Cmd) error {
		var err error
		exited, err = r.startWatched(c)
		return err
	}, cmd, done)
	if err != nil {
		return nil, err
	}
	out := make(chan syscall.WaitStatus, 1)
	go func() {
		ws := <-exited
		close(done)
		out <- ws
	}()
	return out, nil
}

// gpuTally adds up the readings of each GPU between samples of the record.
type gpuTally struct {
	sums   []float64    // utilisation summed over samples, per GPU
	warned map[int]bool // the GPUs whose unreadability was logged
}

// warn logs, once per GPU, why NVML would not read it: its figures are missing
// from the record, the other GPUs' are there.
func (g *gpuTally) warn(unreadable []nvml.Unreadable, log *logger) {
	for _, u := range unreadable {
		if g.warned[u.Index] {
			continue
		}
		if g.warned == nil {
			g.warned = map[int]bool{}
		}
		g.warned[u.Index] = true
		log.Printf("no figures for GPU %d: %s", u.Index, u.Error)
	}
}

// add adds readings to the record's GPUs, one per GPU index.
func (g *gpuTally) add(u *storage.Usage, readings []nvml.Reading) {
	for _, r := range readings {
		for len(u.GPUs) <= r.Index {
			u.GPUs = append(u.GPUs, storage.GPUUsage{Index: len(u.GPUs)})
			g.sums = append(g.sums, 0)
		}
		gu := &u.GPUs[r.Index]
		gu.Samples++
		g.sums[r.Index] += float64(r.UtilizationPercent)
		gu.UtilizationMeanPercent = g.sums[r.Index] / float64(gu.Samples)
		gu.UtilizationPeakPercent = max(gu.UtilizationPeakPercent, r.UtilizationPercent)
		gu.MemoryPeakBytes = max(gu.MemoryPeakBytes, r.MemoryUsedBytes)
		gu.MemoryTotalBytes = r.MemoryTotalBytes
	}
}
