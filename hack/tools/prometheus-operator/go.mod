// Pins prometheus-operator, whose ServiceMonitor CRD the chart's ServiceMonitor is tested
// against: make copies the CRD from this module into bin/prometheus-operator-crds. Nothing
// is built from it, so it has no Go file and no other requirement.
module github.com/tfk8s/tfk8s/hack/tools/prometheus-operator

go 1.26.0

require github.com/prometheus-operator/prometheus-operator v0.85.0
