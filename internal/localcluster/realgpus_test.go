package localcluster

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/localnode"
	"github.com/tfk8s/tfk8s/internal/nvml/nvmltest"
)

// Three GPUs on two nodes: node 0 gets NVML's 0 and 2, node 1 its 1, each once.
func TestAssignRealGPUs(t *testing.T) {
	cmd := nvmltest.Command(t)
	lib := t.TempDir()
	nvmltest.Build(t, lib, "-DFAKE_COUNT=3")
	t.Setenv("LD_LIBRARY_PATH", lib)
	configs := make([]localnode.Config, 2)
	if err := assignRealGPUs(context.Background(), filepath.Dir(cmd), configs); err != nil {
		t.Fatal(err)
	}
	var got [][]int
	for _, c := range configs {
		var minors []int
		for _, d := range c.RealGPUs {
			minors = append(minors, d.Minor)
		}
		got = append(got, minors)
	}
	if diff := cmp.Diff([][]int{{2, 4}, {3}}, got); diff != "" {
		t.Errorf("minor numbers per node (-want +got):\n%s", diff)
	}

	nvmltest.Build(t, lib, "-DFAKE_COUNT=0")
	if err := assignRealGPUs(context.Background(), filepath.Dir(cmd), make([]localnode.Config, 1)); err == nil {
		t.Error("no GPU on the host: no error")
	}
}
