package controller

import (
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
)

// parseIndexes reads a set of replica indexes written as "0,2-4". Malformed parts are
// skipped: the field is written only by tfk8s.
func parseIndexes(s string) sets.Set[int32] {
	out := sets.New[int32]()
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := first; i <= last; i++ {
			out.Insert(int32(i))
		}
	}
	return out
}

// formatIndexes writes a set of replica indexes as ascending ranges: "0,2-4".
func formatIndexes(set sets.Set[int32]) string {
	idx := set.UnsortedList()
	slices.Sort(idx)
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(idx[i])))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(idx[j])))
		}
		i = j + 1
	}
	return b.String()
}
