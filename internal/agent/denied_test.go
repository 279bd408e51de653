package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/agent"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func TestRunFailsForGoodWhenStorageRefusesTheCredentials(t *testing.T) {
	j := newJob(t)
	tests := []struct {
		name     string
		env      string
		wantCode string
	}{
		{name: "unknown access key", env: tfjob.EnvAccessKeyID + "=tfk8s-no-such-key", wantCode: "(XAdminUserNotFound)"},
		{name: "wrong secret", env: tfjob.EnvSecretAccessKey + "=" + strings.Repeat("x", 40), wantCode: "(SignatureDoesNotMatch)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			j.stderr = testutil.SyncBuffer{}
			start := time.Now()
			// Retried, the agent would take most of a minute (fetchBackoff); refused
			// credentials must end it at once.
			j.start(t, []string{tc.env}, "touch", marker)
			code := j.wait(t, 15*time.Second)
			if code != agent.ExitStorageDenied {
				t.Errorf("agent exited %d, want %d; stderr:\n%s", code, agent.ExitStorageDenied, j.stderr.String())
			}
			for _, want := range []string{
				"the storage at http://" + j.srv.Endpoint + " refused the credentials for bucket " + j.srv.Bucket + " " + tc.wantCode,
				"keys accessKeyID and secretAccessKey",
			} {
				if !strings.Contains(j.stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, j.stderr.String())
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran")
			}
			t.Logf("exit %d after %v", code, time.Since(start).Round(time.Millisecond))
		})
	}
}
