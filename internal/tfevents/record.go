// Package tfevents reads TensorFlow event files, the files a summary writer or Keras'
// TensorBoard callback writes (events.out.tfevents.*), and sums their scalars up in a
// Progress record. It decodes the Event protobuf with protowire, so it needs neither
// TensorFlow nor generated code.
package tfevents

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// maxRecord bounds one record's length: a graph can take megabytes, a length beyond
// this is a corrupt file rather than an event.
const maxRecord = 256 << 20

// castagnoli is the CRC-32C table of TFRecord's checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's checksum of b: its CRC-32C, rotated and offset, so that a
// checksum of data holding checksums is not itself trivial.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// errTorn is a record cut short by the end of the file: the writer has not written
// all of it yet.
var errTorn = errors.New("torn record")

// readRecord reads one TFRecord from r, which is at offset off of the file: a
// little-endian uint64 length, the masked CRC of the length, the data, the masked
// CRC of the data. It returns io.EOF at the end of the file and errTorn at a record
// the file ends in the middle of.
func readRecord(r *bufio.Reader, off int64) ([]byte, error) {
	var header [12]byte
	if n, err := io.ReadFull(r, header[:]); err != nil {
		if n == 0 && err == io.EOF {
			return nil, io.EOF
		}
		return nil, errTorn
	}
	if got, want := binary.LittleEndian.Uint32(header[8:]), maskedCRC(header[:8]); got != want {
		return nil, fmt.Errorf("record at offset %d: length checksum %#08x, want %#08x", off, got, want)
	}
	n := binary.LittleEndian.Uint64(header[:8])
	if n > maxRecord {
		return nil, fmt.Errorf("record at offset %d: length %d exceeds %d", off, n, maxRecord)
	}
	data := make([]byte, n+4)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, errTorn
	}
	if got, want := binary.LittleEndian.Uint32(data[n:]), maskedCRC(data[:n]); got != want {
		return nil, fmt.Errorf("record at offset %d: data checksum %#08x, want %#08x", off, got, want)
	}
	return data[:n], nil
}

// recordSize is the bytes a record with n bytes of data takes in the file.
func recordSize(n int) int64 { return int64(n) + 16 }
