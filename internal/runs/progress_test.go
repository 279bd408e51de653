package runs

import "testing"

// TestLoss: the LOSS column is a training loss before a validation one, read from the
// agent's progress record.
func TestLoss(t *testing.T) {
	for _, tc := range []struct {
		name, record, want string
	}{
		{"keras", `{"scalars":{"validation/epoch_loss":{"value":0.9},"train/epoch_loss":{"value":0.123456},"train/epoch_accuracy":{"value":0.5}}}`, "0.1235"},
		{"tf.summary", `{"scalars":{"loss":{"value":2}}}`, "2"},
		{"only validation", `{"scalars":{"validation/epoch_loss":{"value":0.9}}}`, "0.9"},
		{"diverged", `{"scalars":{"loss":{"value":"NaN"}}}`, "NaN"},
		{"no loss", `{"scalars":{"accuracy":{"value":0.5}}}`, ""},
		{"not a record", `{`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := loss([]byte(tc.record)); got != tc.want {
				t.Errorf("loss = %q, want %q", got, tc.want)
			}
		})
	}
}
