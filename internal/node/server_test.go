package node

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseLogQuery(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		query        string
		want         logOptions
		wantPrevious bool
		wantErr      bool
	}{
		{query: "", want: logOptions{TailLines: -1}},
		{query: "follow=true&timestamps=true&previous=true", want: logOptions{TailLines: -1, Follow: true, Timestamps: true}, wantPrevious: true},
		{query: "tailLines=10&limitBytes=100", want: logOptions{TailLines: 10, LimitBytes: 100}},
		{query: "sinceSeconds=60", want: logOptions{TailLines: -1, SinceTime: now.Add(-time.Minute)}},
		{query: "sinceTime=2026-01-01T11:00:00Z", want: logOptions{TailLines: -1, SinceTime: now.Add(-time.Hour)}},
		{query: "tailLines=-1", wantErr: true},
		{query: "limitBytes=x", wantErr: true},
		{query: "sinceTime=yesterday", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/containerLogs/ns/p/c?"+tc.query, nil)
			got, previous, err := parseLogQuery(r, now)
			if tc.wantErr != (err != nil) {
				t.Fatalf("error %v, want error %t", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
			if previous != tc.wantPrevious {
				t.Errorf("previous %t, want %t", previous, tc.wantPrevious)
			}
		})
	}
}
