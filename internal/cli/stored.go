package cli

import (
	"context"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// What the CLI reads of what a job's agents stored, laid out as internal/storage's
// layout.go says.

// readManifestAt reads the manifest of the replica stored under prefix; an error
// wrapping storage.ErrNotFound when it has none.
func readManifestAt(ctx context.Context, c *storage.Client, replica storage.URI) (*storage.Manifest, error) {
	return storage.ReadManifest(ctx, c, replica)
}
