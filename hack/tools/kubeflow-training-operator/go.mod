// Pins Kubeflow's training-operator, whose published kubeflow.org TFJob CRD the tfk8s
// kubeflow.org/v1 API is compared with (test/integration/api). Nothing is built from
// it, so it has no Go file and no other requirement.
module github.com/tfk8s/tfk8s/hack/tools/kubeflow-training-operator

go 1.26.0

require github.com/kubeflow/training-operator v1.9.4
