package tfevents

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// IsEventFile reports whether a file's name is an event file's, as TensorBoard tells
// them: its base name holds "tfevents".
func IsEventFile(path string) bool {
	return strings.Contains(filepath.Base(path), "tfevents")
}

// Reader reads one event file incrementally: each read starts where the last complete
// record ended, so that a file a writer appends to is read once.
type Reader struct {
	// Offset is where the next read starts: the end of the last complete record.
	Offset int64
	// plugins is the plugin of each tag seen, which a writer may give only once.
	plugins map[string]string
}

// Read reads the complete records of r, which is at r's Offset, and returns their
// events. A record the input ends in the middle of (one being written) is left for the
// next read. A record that fails its checksum or does not parse is an error naming its
// offset; the events before it are returned with it, and the reader stays before it.
func (rd *Reader) Read(r io.Reader) ([]Event, error) {
	if rd.plugins == nil {
		rd.plugins = map[string]string{}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var events []Event
	for {
		data, err := readRecord(br, rd.Offset)
		if err == io.EOF || errors.Is(err, errTorn) {
			return events, nil
		}
		if err != nil {
			return events, err
		}
		ev, err := decodeEvent(data, rd.plugins)
		if err != nil {
			return events, fmt.Errorf("event at offset %d: %w", rd.Offset, err)
		}
		rd.Offset += recordSize(len(data))
		events = append(events, ev)
	}
}

// ReadFile reads the events that the file at path holds past the reader's Offset and
// before limit (its size, when limit is negative): the bytes an upload stored. A file
// now shorter than Offset was replaced, and is read again from its start.
func (rd *Reader) ReadFile(path string, limit int64) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if limit < 0 || limit > st.Size() {
		limit = st.Size()
	}
	if limit < rd.Offset {
		*rd = Reader{}
	}
	events, err := rd.Read(io.NewSectionReader(f, rd.Offset, limit-rd.Offset))
	if err != nil {
		return events, fmt.Errorf("reading %s: %w", path, err)
	}
	return events, nil
}
