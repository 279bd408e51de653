package localcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Kubeconfig returns the path of the cluster's kubeconfig and its content, or an error
// saying to start the cluster when it has none yet.
func Kubeconfig(opts Options) (path string, data []byte, err error) {
	resolved, err := resolve(opts)
	if err != nil {
		return "", nil, err
	}
	path = pathsIn(resolved.Dir).kubeconfig
	data, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("no kubeconfig in %s: run tfk8s local up%s", resolved.Dir, dirFlag(resolved.Dir))
	}
	if err != nil {
		return "", nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	return path, data, nil
}
