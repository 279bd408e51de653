//go:build !sdk

package cli

import "testing"

func TestForwardFlagsLocal(t *testing.T) {
	cases := []struct {
		f       forwardFlags
		want    string
		wantErr string
	}{
		{forwardFlags{address: "127.0.0.1"}, "127.0.0.1:0", ""},
		{forwardFlags{address: "::1", port: 8888}, "[::1]:8888", ""},
		{forwardFlags{address: "127.0.0.1", port: 70000}, "", "--port 70000: want 0 (any free port) to 65535"},
	}
	for _, tc := range cases {
		got, err := tc.f.local()
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
			t.Errorf("%+v: %q, %v; want %q, %q", tc.f, got, err, tc.want, tc.wantErr)
		}
	}
}
