package runs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// Objects lists what a run stored: everything under its prefix, or, for the files
// stored before runs (LegacyRun), everything under its job's prefix but the runs.
func Objects(ctx context.Context, c *storage.Client, r Run) ([]storage.Object, error) {
	prefix, err := storage.ParseURI(r.Prefix)
	if err != nil {
		return nil, fmt.Errorf("run %s/%s: %w", r.Name, r.Run, err)
	}
	objs, err := c.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if r.Run == storage.LegacyRun {
		objs = slices.DeleteFunc(objs, func(o storage.Object) bool {
			first, _, _ := strings.Cut(strings.TrimPrefix(o.URI.Key, prefix.Key), "/")
			return storage.IsRunID(first)
		})
	}
	return objs, nil
}

// Delete deletes the objects of a run, as Objects listed them.
func Delete(ctx context.Context, c *storage.Client, objs []storage.Object) error {
	if len(objs) == 0 {
		return nil
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.URI.Key
	}
	return c.Remove(ctx, objs[0].URI.Bucket, keys)
}
