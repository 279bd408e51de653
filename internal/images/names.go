// Package images names the images tfk8s builds for the programs it runs, so that the
// CLI, the demo and the tests refer to them in one way.
//
// Both are built by make tensorflow-image (hack/tensorflow-image), without Docker, from
// Debian's packages and PyPI's wheels, as OCI layouts _out/images/python/ and
// _out/images/tensorflow/; tfk8s local up loads them into the local cluster's registry,
// which the node uses as a mirror, so that the same references work on a real cluster
// once the images are pushed there.
package images

import "github.com/tfk8s/tfk8s/internal/version"

const (
	// Python is Debian bookworm (minbase) with python3 and nothing else: the image of
	// the dependency-free trainer (examples/trainer) and the fast tests.
	Python = "ghcr.io/tfk8s/python:3.11"

	// TensorFlow is Python plus tensorflow-cpu 2.21.0, tf-keras and tensorboard with
	// their pinned requirements: the image of examples/tensorflow and the demo.
	TensorFlow = "ghcr.io/tfk8s/tensorflow:2.21.0-cpu"
)

// TensorFlowGPU is Python plus tensorflow 2.21.0 built with CUDA 12, the nvidia-*-cu12
// wheels of the libraries it loads (each its own layer), tf-keras and tensorboard: the
// image of a job that asks for GPUs and names no image (make tensorflow-gpu-image). On
// a node without a GPU it says so in one line and runs on the CPU.
const TensorFlowGPU = "ghcr.io/tfk8s/tensorflow:2.21.0-gpu"

// Jupyter is TensorFlow plus JupyterLab 4 (pinned with its requirements) and the tfk8s
// CLI at /usr/local/bin/tfk8s, run as jovyan (uid 1000) in /home/jovyan: the image of
// tfk8s notebook, from whose cells !tfk8s submit runs jobs.
const Jupyter = "ghcr.io/tfk8s/jupyter:2.21.0-cpu"

// Agent holds this build's tfk8s-agent binary (make images stamps the controller, the
// CLI and the agent with one version): the controller injects it into jobs, and tfk8s
// tensorboard over runs mirrors their summaries with it.
var Agent = version.Image("tfk8s-agent")
