package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// checkDir checks that dir is a readable directory, naming the flag or argument it
// came from.
func checkDir(what, dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s %s: not a directory", what, dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	defer f.Close()
	if _, err := f.ReadDir(1); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	return nil
}
