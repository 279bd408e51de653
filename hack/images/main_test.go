package main

import (
	"strings"
	"testing"
)

// An --extra without its IMAGE: would put nothing beside any image: it is refused.
func TestBuildRefusesAnExtraWithoutItsImage(t *testing.T) {
	for _, extra := range []string{"tfk8s-nvml", ":tfk8s-nvml", "tfk8s-agent:"} {
		err := build([]string{"--version", "v0", "--out", t.TempDir(), "--extra", extra, "tfk8s-agent"})
		if err == nil || !strings.Contains(err.Error(), `--extra "`+extra+`": want IMAGE:BINARY`) {
			t.Errorf("--extra %s: error %v, want it refused naming the flag", extra, err)
		}
	}
}
