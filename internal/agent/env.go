package agent

import (
	"slices"
	"strings"

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
