package controller

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// metricValue reads a counter or the sample count of a histogram from the registry the
// in-process controllers report to, for the series whose namespace label is ns (or any
// series, with ns empty).
func metricValue(t *testing.T, name, ns string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			match := ns == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == ns {
					match = true
				}
			}
			if !match {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}
