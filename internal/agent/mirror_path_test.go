package agent

import "testing"

// TestLocalPath: keys whose path relative to the prefix climbs out of the directory
// are refused. S3 stores such keys as they are; the test's S3 server (a POSIX
// backend) cannot, so the mapping is tested here.
func TestLocalPath(t *testing.T) {
	for _, tc := range []struct {
		rel, want string
	}{
		{"worker-0/train/events.out.tfevents.1", "/mirror/worker-0/train/events.out.tfevents.1"},
		{"a..b/events", "/mirror/a..b/events"},
		{"../escaped.tfevents", ""},
		{"worker-0/../../escaped", ""},
		{"/etc/passwd", ""},
		{"..", ""},
	} {
		t.Run(tc.rel, func(t *testing.T) {
			got, err := localPath("/mirror", tc.rel)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("localPath(%q) = %q, want it refused", tc.rel, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("localPath(%q) = %q, %v; want %q", tc.rel, got, err, tc.want)
			}
		})
	}
}
