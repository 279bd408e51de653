package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/version"
)

// The images the controller puts into pods of its own making, by its flag. Local mode
// gives them to the controller by digest: every `make images` builds the agent under
// the same tag, and a node that has an older image of that tag would run it
// (imagePullPolicy IfNotPresent) rather than the one just pushed.
var controllerImageFlags = []struct{ flag, ref string }{
	{"--agent-image", version.Image("tfk8s-agent")},
	{"--tensorboard-image", images.TensorFlow},
}

// pinnedImageArgs are the controller's image flags for the images up pushed, each
// "<reference>@<digest>".
func pinnedImageArgs(pushed map[string]string) []string {
	var args []string
	for _, f := range controllerImageFlags {
		if digest, ok := pushed[f.ref]; ok {
			args = append(args, f.flag+"="+f.ref+"@"+digest)
		}
	}
	return args
}

// runsWithArgs reports whether the process pid runs with exactly args after its
// executable, as /proc says.
func runsWithArgs(pid int, args []string) (bool, error) {
	got, err := processArgs(pid)
	if err != nil {
		return false, err
	}
	return slices.Equal(got, args), nil
}

// processArgs are the arguments after its executable of the process pid, as /proc
// says.
func processArgs(pid int) ([]string, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, fmt.Errorf("reading the arguments of pid %d: %w", pid, err)
	}
	fields := bytes.Split(bytes.TrimSuffix(raw, []byte{0}), []byte{0})
	got := make([]string, 0, len(fields))
	for _, f := range fields[1:] {
		got = append(got, string(f))
	}
	return got, nil
}
