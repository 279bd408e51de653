package e2e

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// TestMain quiets controller-runtime, whose client the CLI makes in-process here as
// tfk8s's main does (cli.Run): unset, its logger prints a stack the first time a
// client is made, which reads like a failure in a test's log.
func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	os.Exit(m.Run())
}
