package jobspec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// TestCheckNamesTheParameter: every refusal names the parameter as its flag does,
// whichever front end sent it.
func TestCheckNamesTheParameter(t *testing.T) {
	for _, tc := range []struct {
		js   string
		want string
	}{
		{`{"workers": -1}`, "--workers -1: must not be negative"},
		{`{"workers": 0}`, "--workers 0 needs --chief: a job needs a chief or at least one worker"},
		{`{"ps": -2}`, "--ps -2: must not be negative"},
		{`{"name": "Bad_Name"}`, `--name "Bad_Name": a DNS-1035 label`},
		{`{"cpu": "lots"}`, `--cpu "lots": not a quantity (want e.g. 2, 500m, 4Gi)`},
		{`{"env": ["NOVALUE"]}`, `--env "NOVALUE": want NAME=VALUE`},
		{`{"volume": ["name=a"]}`, `--volume "name=a": mount is required`},
		{`{"restart-policy": "sometimes"}`, `--restart-policy "sometimes": want one of Always|OnFailure|Never|ExitCode`},
		{`{"active-deadline": "1.5s"}`, "--active-deadline 1.5s: want whole seconds, e.g. 90s or 2h"},
		{`{"backoff-limit": -1}`, "--backoff-limit -1: must not be negative"},
		{`{"resume-from": "s3://x"}`, `--resume-from "s3://x": want the name of an earlier job`},
		{`{"device-class": "gpu.example.com"}`, "--device-class gpu.example.com needs --gpus from 1 to 32"},
		{`{"device-class": "GPU_Class", "gpus": 1}`, `--device-class "GPU_Class": not a DeviceClass name`},
		{`{"device-selector": ["device.driver == 'x'"]}`, `--device-selector "device.driver == 'x'" needs --device-class`},
		{`{"device-class": "g.example.com", "gpus": 1, "device-selector": [` + strings.Repeat(`"x",`, 32) + `"x"]}`,
			"--device-selector given 33 times: at most 32"},
		{`{"device-class": "g.example.com", "gpus": 1, "device-selector": ["` + strings.Repeat("x", 10241) + `"]}`,
			"--device-selector #1 is 10241 characters long: at most 10240"},
	} {
		var p Params
		if err := json.Unmarshal([]byte(tc.js), &p); err != nil {
			t.Fatal(err)
		}
		_, err := p.Check(false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.js, err, tc.want)
		}
	}
}

// TestNewFromJSON: the SDK's way in, parameters as JSON named like the flags, gives
// the job the flags give, defaults included.
func TestNewFromJSON(t *testing.T) {
	var p Params
	js := `{"name": "mnist", "namespace": "team", "image": "tf", "ps": 1, "workers": 2, "command": ["python3", "t.py"], "active-deadline": "2h"}`
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatal(err)
	}
	job, err := New(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{
		"ps": *job.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS].Replicas, "workers": *job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas,
		"deadline": *job.Spec.RunPolicy.ActiveDeadlineSeconds, "backoff": *job.Spec.RunPolicy.BackoffLimit,
		"restart": job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].RestartPolicy, "namespace": job.Namespace,
	}
	want := map[string]any{"ps": int32(1), "workers": int32(2), "deadline": int64(7200), "backoff": DefaultBackoffLimit,
		"restart": DefaultRestartPolicy, "namespace": "team"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("job (-want +got):\n%s", d)
	}
	// Over a manifest, a parameter left out leaves the manifest's value.
	base := job.DeepCopy()
	base.Spec.RunPolicy.BackoffLimit = ptr.To[int32](1)
	again, err := New(base, Params{Workers: ptr.To[int32](4)})
	if err != nil {
		t.Fatal(err)
	}
	if *again.Spec.RunPolicy.BackoffLimit != 1 || *again.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas != 4 {
		t.Errorf("over the manifest: backoffLimit %d, workers %d; want 1, 4", *again.Spec.RunPolicy.BackoffLimit,
			*again.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas)
	}
}
