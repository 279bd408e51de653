package storage

import "testing"

// SetUploadReadHook makes every upload of a file call hook once, after its first bytes
// were read, until the test ends.
func SetUploadReadHook(t *testing.T, hook func(path string)) {
	uploadReadHook = hook
	t.Cleanup(func() { uploadReadHook = nil })
}
