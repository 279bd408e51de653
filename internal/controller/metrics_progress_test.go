package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestJobStepRateLabels: tfk8s_job_steps_per_second names the job in tfjob, not job or
// instance, which the ServiceMonitor's honorLabels would let overwrite Prometheus's own
// target labels (job naming the scrape, not the TFJob).
func TestJobStepRateLabels(t *testing.T) {
	m := prometheus.MustNewConstMetric(jobStepRates.desc, prometheus.GaugeValue, 1.5, "team-a", "train")
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range pb.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	if len(got) != 2 || got["namespace"] != "team-a" || got["tfjob"] != "train" {
		t.Errorf("tfk8s_job_steps_per_second labels %v, want namespace=team-a tfjob=train and no job or instance", got)
	}
}
