package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfk8s/tfk8s/internal/tfconfig"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// WriteTFConfig writes the TF_CONFIG of a replica, read from its pod: the one named
// by replica (e.g. worker-1), else the first.
func WriteTFConfig(w io.Writer, pods []corev1.Pod, replica string) error {
	var pod *corev1.Pod
	for i := range pods {
		if replica == "" || ReplicaName(&pods[i]) == replica {
			pod = &pods[i]
			break
		}
	}
	if pod == nil {
		if replica != "" {
			return fmt.Errorf("--replica %s: the job has no pod for this replica", replica)
		}
		fmt.Fprintln(w, "TF_CONFIG:\n  <no pods>")
		return nil
	}
	value := "<not set: a job with a single replica runs without TF_CONFIG>"
	if c := tfjob.TensorFlowContainer(pod.Spec.Containers); c != nil {
		// A large job's pods carry the cluster in place of TF_CONFIG, which the agent
		// composes at start: show what the program reads.
		composed, err := tfconfig.OfContainer(c)
		if err != nil {
			return fmt.Errorf("reading the TF_CONFIG of %s: %w", pod.Name, err)
		}
		if composed != "" {
			var buf bytes.Buffer
			if json.Indent(&buf, []byte(composed), "  ", "  ") == nil {
				value = buf.String()
			} else {
				value = composed
			}
		}
	}
	fmt.Fprintf(w, "TF_CONFIG (%s):\n  %s\n", ReplicaName(pod), value)
	return nil
}
