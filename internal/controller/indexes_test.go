package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/sets"
)

// TestIndexes checks the "0,2-4" form of succeeded and failed indexes: parsed into a
// set and written back in canonical form.
func TestIndexes(t *testing.T) {
	cases := []struct {
		name       string
		in         string
		wantSet    []int32
		wantFormat string
	}{
		{name: "ranges and singles", in: "0,2-4", wantSet: []int32{0, 2, 3, 4}, wantFormat: "0,2-4"},
		{name: "empty", in: "", wantSet: []int32{}, wantFormat: ""},
		{name: "one index", in: "7", wantSet: []int32{7}, wantFormat: "7"},
		{name: "two adjacent indexes become a range", in: "1,2", wantSet: []int32{1, 2}, wantFormat: "1-2"},
		{name: "unsorted and overlapping", in: "5,0-1,1-2", wantSet: []int32{0, 1, 2, 5}, wantFormat: "0-2,5"},
		{name: "malformed parts skipped", in: "x,3,4-y", wantSet: []int32{3}, wantFormat: "3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := parseIndexes(tc.in)
			if diff := cmp.Diff(tc.wantSet, sets.List(set)); diff != "" {
				t.Errorf("parseIndexes(%q) (-want +got):\n%s", tc.in, diff)
			}
			if diff := cmp.Diff(tc.wantFormat, formatIndexes(set)); diff != "" {
				t.Errorf("formatIndexes (-want +got):\n%s", diff)
			}
		})
	}
}
