package cli

import (
	"testing"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestS3KeysRefusedAsTroubleshootingSays submits with an access key the test's S3
// server does not know, and checks that the CLI fails with the line
// docs/troubleshooting.md shows.
func TestS3KeysRefusedAsTroubleshootingSays(t *testing.T) {
	f := newFixture(t)
	f.env[tfjob.EnvAccessKeyID] = "tfk8s-no-such-key"
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	r := f.tfk8s("submit", code, "--name", "refused", "--image", "tf", "--", "python3", "train.py")
	if r.code == 0 {
		t.Errorf("submit with an unknown access key: %s", r)
	}
	testutil.CheckAsTroubleshootingSays(t, "s3-keys-refused", r.stderr)
}
