package agent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tfk8s/tfk8s/internal/nvml"
)

// BinaryName is the agent's file name, in its install directory.
const BinaryName = "tfk8s-agent"

// Install copies the running executable to dir/tfk8s-agent with mode 0755, through a
// temporary file renamed into place, and tfk8s-nvml beside it where the image has it.
// The controller's init container runs it to put the agent in a volume the training
// container shares.
func Install(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("installing the agent: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("installing the agent: %w", err)
	}
	dst := filepath.Join(dir, BinaryName)
	if err := copyExecutable(self, dst); err != nil {
		return fmt.Errorf("installing the agent to %s: %w", dst, err)
	}
	if gpus := nvml.Beside(); gpus != "" {
		dst := filepath.Join(dir, nvml.Command)
		if err := copyExecutable(gpus, dst); err != nil {
			return fmt.Errorf("installing %s to %s: %w", nvml.Command, dst, err)
		}
	}
	return nil
}

// copyExecutable copies src to dst, mode 0755.
func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
