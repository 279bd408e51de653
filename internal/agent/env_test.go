package agent_test

import (
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func TestRunKeepsStorageCredentialsFromTheCommand(t *testing.T) {
	j := newBareJob(t)
	tests := []struct {
		name   string
		expose string
		want   bool
	}{
		{name: "by default", expose: "", want: false},
		{name: "opted in", expose: "true", want: true},
	}
	for n, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"AWS_SESSION_TOKEN=session-token-4d1f", "TRAINER_SETTING=kept"}
			if tc.expose != "" {
				env = append(env, tfjob.EnvExposeStorageCredentials+"="+tc.expose)
			}
			if code := j.run(t, env, "env"); code != 0 {
				t.Fatalf("agent exited %d; stderr:\n%s", code, j.stderr.String())
			}
			log := j.storedLog(t, n+1)
			if !strings.Contains(log, "TRAINER_SETTING=kept") || !strings.Contains(log, tfjob.EnvReplica+"=worker-1") {
				t.Errorf("the command's own environment is missing from its log:\n%s", log)
			}
			for _, secret := range []string{j.srv.SecretKey, j.srv.AccessKey, "session-token-4d1f", "TFK8S_S3_ENDPOINT=", "AWS_REGION="} {
				if strings.Contains(log, secret) != tc.want {
					t.Errorf("stored log holds %q: %v, want %v:\n%s", secret, !tc.want, tc.want, log)
				}
			}
		})
	}
}
