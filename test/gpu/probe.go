package gpu

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/tfk8s/tfk8s/internal/nvml"
)

// HostEnv is the machine's own: / as it is, the source tree at repo, NVML probed
// through tfk8s-nvml, and PyPI (or PIP_INDEX_URL) asked for tensorflow's page.
func HostEnv(repo string) Env {
	return Env{Root: "/", Repo: repo, NVML: probeNVML, Index: probeIndex}
}

func probeNVML(ctx context.Context, cmd string) error {
	devs, err := nvml.Devices(ctx, cmd)
	if err == nil && len(devs) == 0 {
		err = fmt.Errorf("no GPU listed")
	}
	return err
}

func probeIndex(ctx context.Context) error {
	index := os.Getenv("PIP_INDEX_URL")
	if index == "" {
		index = "https://pypi.org/simple/"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, index+"tensorflow/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fmt.Errorf("%s answers %s", req.URL, resp.Status)
	}
	return nil
}
