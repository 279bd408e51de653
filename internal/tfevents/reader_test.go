package tfevents

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// expected reads testdata/expected.json: the [step, value] pairs make.py wrote, by
// "<dir>/<tag>".
func expected(t *testing.T) map[string][][2]float64 {
	t.Helper()
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][][2]float64
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	return want
}

// eventFile returns the one event file in testdata/dir.
func eventFile(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "events.out.tfevents.*"))
	if err != nil || len(files) != 1 {
		t.Fatalf("want one event file in testdata/%s, found %v (%v)", dir, files, err)
	}
	return files[0]
}

// scalarsOf collects the scalars of events as "<dir>/<tag>" → [step, value] pairs.
func scalarsOf(dir string, events []Event, into map[string][][2]float64) {
	for _, ev := range events {
		for _, s := range ev.Scalars {
			key := path.Join(dir, s.Tag)
			into[key] = append(into[key], [2]float64{float64(ev.Step), s.Value})
		}
	}
}

// only keeps the entries of m under dir.
func only(m map[string][][2]float64, dir string) map[string][][2]float64 {
	out := map[string][][2]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, dir+"/") {
			out[k] = v
		}
	}
	return out
}

func TestReadFileWrittenByTensorFlow(t *testing.T) {
	want := expected(t)
	for _, dir := range []string{"scalars", "fit/train", "fit/validation"} {
		t.Run(dir, func(t *testing.T) {
			file := eventFile(t, dir)
			var rd Reader
			events, err := rd.ReadFile(file, -1)
			if err != nil {
				t.Fatal(err)
			}
			if len(events) == 0 || events[0].FileVersion != "brain.Event:2" {
				t.Errorf("first event %+v, want file_version brain.Event:2", events[:min(1, len(events))])
			}
			if st, _ := os.Stat(file); rd.Offset != st.Size() {
				t.Errorf("offset after reading %d, want the file's size %d", rd.Offset, st.Size())
			}
			for _, ev := range events[1:] {
				if ev.WallTime < events[0].WallTime || ev.WallTime > events[0].WallTime+3600 {
					t.Errorf("event at step %d has wall time %f; the file's first, %f", ev.Step, ev.WallTime, events[0].WallTime)
				}
			}
			got := map[string][][2]float64{}
			scalarsOf(dir, events, got)
			if diff := cmp.Diff(only(want, dir), got); diff != "" {
				t.Errorf("scalars (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadTornFileThenItsEnd(t *testing.T) {
	want := only(expected(t), "scalars")
	full, err := os.ReadFile(eventFile(t, "scalars"))
	if err != nil {
		t.Fatal(err)
	}
	torn, err := os.ReadFile(eventFile(t, "torn"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(full, torn) || len(torn) >= len(full) {
		t.Fatalf("testdata/torn is not a prefix of testdata/scalars: %d and %d bytes", len(torn), len(full))
	}

	// The torn file yields every complete record, without error, and stops before
	// the torn one: the legacy summary, written last.
	file := filepath.Join(t.TempDir(), "events.out.tfevents.1.test")
	if err := os.WriteFile(file, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	var rd Reader
	events, err := rd.ReadFile(file, -1)
	if err != nil {
		t.Fatalf("reading a torn file: %v", err)
	}
	got := map[string][][2]float64{}
	scalarsOf("scalars", events, got)
	wantTorn := only(want, "scalars")
	delete(wantTorn, "scalars/legacy")
	if diff := cmp.Diff(wantTorn, got); diff != "" {
		t.Errorf("scalars of the torn file (-want +got):\n%s", diff)
	}
	if rd.Offset >= int64(len(torn)) || rd.Offset < int64(len(torn))-40 {
		t.Errorf("offset %d after the torn file of %d bytes: want the start of its last record", rd.Offset, len(torn))
	}

	// The writer finishes the record: the next read yields it, and only it.
	if err := os.WriteFile(file, full, 0o644); err != nil {
		t.Fatal(err)
	}
	events, err = rd.ReadFile(file, -1)
	if err != nil {
		t.Fatal(err)
	}
	got = map[string][][2]float64{}
	scalarsOf("scalars", events, got)
	if diff := cmp.Diff(map[string][][2]float64{"scalars/legacy": want["scalars/legacy"]}, got); diff != "" {
		t.Errorf("scalars once the file is complete (-want +got):\n%s", diff)
	}
}

func TestReadGrowingByteByByte(t *testing.T) {
	full, err := os.ReadFile(eventFile(t, "fit/validation"))
	if err != nil {
		t.Fatal(err)
	}
	var whole Reader
	want, err := whole.Read(bytes.NewReader(full))
	if err != nil {
		t.Fatal(err)
	}
	// A reader that sees the file one more byte at a time reads each event once.
	var rd Reader
	var got []Event
	for n := range len(full) + 1 {
		events, err := rd.Read(bytes.NewReader(full[rd.Offset:n]))
		if err != nil {
			t.Fatalf("at %d bytes: %v", n, err)
		}
		got = append(got, events...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events read byte by byte (-whole +incremental):\n%s", diff)
	}
}

func TestReadBadChecksum(t *testing.T) {
	full, err := os.ReadFile(eventFile(t, "scalars"))
	if err != nil {
		t.Fatal(err)
	}
	// The third record starts after the first two; a bit of it is flipped.
	third := int64(0)
	for range 2 {
		third += recordSize(int(binary.LittleEndian.Uint64(full[third:])))
	}
	for _, tc := range []struct {
		name string
		at   int64
		want string
	}{
		{"in the length", third, "record at offset " + strconv.FormatInt(third, 10) + ": length checksum"},
		{"in the data", third + 12, "record at offset " + strconv.FormatInt(third, 10) + ": data checksum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Clone(full)
			bad[tc.at] ^= 0x10
			var rd Reader
			events, err := rd.Read(bytes.NewReader(bad))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if len(events) != 2 || rd.Offset != third {
				t.Errorf("read %d events and stayed at %d; want the 2 before it, and offset %d", len(events), rd.Offset, third)
			}
		})
	}
}
