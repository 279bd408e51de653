// Pins Kubeflow's training-operator v1.8.1, the release before v1.9, beside v1.9.4 in
// hack/tools/kubeflow-training-operator: test/integration/api applies the TFJob examples
// of both, read from the module cache. Nothing is built from it, so it has no Go file.
module github.com/tfk8s/tfk8s/hack/tools/kubeflow-training-operator-1.8

go 1.26.0

require github.com/kubeflow/training-operator v1.8.1
