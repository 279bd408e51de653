package agent

import (
	"slices"
	"strings"

	"github.com/tfk8s/tfk8s/internal/tfconfig"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// storageEnv are the variables through which the agent receives the storage's address
// and credentials. They are the agent's, not the command's: an `env` dump, a crash
// report or a framework that logs its environment would put them in the log the agent
// uploads, readable by whoever reads the job's artifacts.
var storageEnv = []string{
	tfjob.EnvAccessKeyID,
	tfjob.EnvSecretAccessKey,
	"AWS_SESSION_TOKEN",
	tfjob.EnvRegion,
	tfjob.EnvS3Endpoint,
	tfjob.EnvS3Bucket,
	tfjob.EnvS3Insecure,
}

// commandEnv returns the command's environment: the agent's, less the storage
// settings unless expose says to pass them on.
func commandEnv(environ []string, expose bool) []string {
	if expose {
		return environ
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !isStorageEnv(name) {
			out = append(out, kv)
		}
	}
	return out
}

// isStorageEnv reports whether name is one of the storage settings, or another
// TFK8S_S3_ setting.
func isStorageEnv(name string) bool {
	return slices.Contains(storageEnv, name) || strings.HasPrefix(name, "TFK8S_S3_")
}

// withTFConfig gives the command its TF_CONFIG when the pod carries the job's cluster
// (tfconfig.EnvCluster) in its place, as a large job's pods do: composed from the
// cluster and the replica this is, the same bytes the controller would have written.
// The cluster variable itself is the agent's, not the command's.
func withTFConfig(environ []string, replica string) ([]string, error) {
	i := slices.IndexFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, tfconfig.EnvCluster+"=") })
	if i < 0 {
		return environ, nil
	}
	value, err := tfconfig.Compose(strings.TrimPrefix(environ[i], tfconfig.EnvCluster+"="), replica)
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == tfconfig.EnvCluster || name == tfjob.EnvTFConfig
	})
	if value != "" {
		out = append(out, tfjob.EnvTFConfig+"="+value)
	}
	return out, nil
}
