//go:build !sdk

package cli

import (
	"fmt"
	"os/exec"
	"runtime"
)

// browserOpener is the program that opens a URL in the user's browser on this system.
func browserOpener() string {
	if runtime.GOOS == "darwin" {
		return "open"
	}
	return "xdg-open"
}

// openBrowser starts the user's browser on url (xdg-open / open), for --open.
func openBrowser(url string) error {
	opener := browserOpener()
	path, err := exec.LookPath(opener)
	if err != nil {
		return fmt.Errorf("opening a browser: %s not found; open %s yourself", opener, url)
	}
	cmd := exec.Command(path, url)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("opening a browser with %s: %w", opener, err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
