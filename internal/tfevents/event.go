package tfevents

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Event is what this package keeps of a tensorflow.Event (tensorflow/core/util/event.proto).
type Event struct {
	// WallTime is in seconds since the epoch.
	WallTime float64
	Step     int64
	// FileVersion is set in a file's first event ("brain.Event:2").
	FileVersion string
	// Scalars are the scalar values of its summary, in order.
	Scalars []Scalar
}

// Scalar is one scalar value of a summary.
type Scalar struct {
	Tag   string
	Value float64
}

// The field numbers read, as TensorFlow 2.21's event.proto, summary.proto,
// tensor.proto and tensor_shape.proto number them.
const (
	eventWallTime    = 1 // double
	eventStep        = 2 // int64
	eventFileVersion = 3 // string
	eventSummary     = 5 // Summary

	summaryValue = 1 // repeated Summary.Value

	valueTag         = 1 // string
	valueSimpleValue = 2 // float
	valueTensor      = 8 // TensorProto
	valueMetadata    = 9 // SummaryMetadata

	metadataPluginData = 1 // SummaryMetadata.PluginData
	pluginName         = 1 // string

	tensorDtype   = 1 // DataType
	tensorShape   = 2 // TensorShapeProto
	tensorContent = 4 // bytes
	tensorFloat   = 5 // repeated float
	tensorDouble  = 6 // repeated double

	shapeDim = 2 // repeated TensorShapeProto.Dim

	dtFloat  = 1 // DT_FLOAT
	dtDouble = 2 // DT_DOUBLE
)

// scalarsPlugin is the plugin_name of tf.summary.scalar's tensors.
const scalarsPlugin = "scalars"

// decodeEvent decodes an Event. plugins holds the plugin of each tag seen so far:
// a writer may give a tag's metadata only with its first value.
func decodeEvent(b []byte, plugins map[string]string) (Event, error) {
	var ev Event
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == eventWallTime && typ == protowire.Fixed64Type:
			ev.WallTime = math.Float64frombits(x)
		case num == eventStep && typ == protowire.VarintType:
			ev.Step = int64(x)
		case num == eventFileVersion && typ == protowire.BytesType:
			ev.FileVersion = string(v)
		case num == eventSummary && typ == protowire.BytesType:
			return walk(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num != summaryValue || typ != protowire.BytesType {
					return nil
				}
				s, ok, err := decodeValue(v, plugins)
				if ok {
					ev.Scalars = append(ev.Scalars, s)
				}
				return err
			})
		}
		return nil
	})
	return ev, err
}

// decodeValue decodes a Summary.Value and returns it if it is a scalar: a
// simple_value, or a rank-0 float or double tensor of the scalars plugin.
func decodeValue(b []byte, plugins map[string]string) (Scalar, bool, error) {
	var s Scalar
	var simple, hasTensor, haveTensorValue bool
	var plugin string
	var tensor []byte
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == valueTag && typ == protowire.BytesType:
			s.Tag = string(v)
		case num == valueSimpleValue && typ == protowire.Fixed32Type:
			s.Value, simple = float64(math.Float32frombits(uint32(x))), true
		case num == valueTensor && typ == protowire.BytesType:
			tensor, hasTensor = v, true
		case num == valueMetadata && typ == protowire.BytesType:
			return walk(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num != metadataPluginData || typ != protowire.BytesType {
					return nil
				}
				return walk(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
					if num == pluginName && typ == protowire.BytesType {
						plugin = string(v)
					}
					return nil
				})
			})
		}
		return nil
	})
	if err != nil {
		return Scalar{}, false, err
	}
	if plugin != "" {
		plugins[s.Tag] = plugin
	}
	if simple {
		return s, true, nil
	}
	if !hasTensor || plugins[s.Tag] != scalarsPlugin {
		return Scalar{}, false, nil
	}
	s.Value, haveTensorValue, err = scalarOf(tensor)
	return s, haveTensorValue, err
}

// scalarOf returns the value of a rank-0 float or double TensorProto; false for any
// other tensor.
func scalarOf(b []byte) (float64, bool, error) {
	var dtype uint64
	var rank int
	var content []byte
	var floats []float64
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == tensorDtype && typ == protowire.VarintType:
			dtype = x
		case num == tensorShape && typ == protowire.BytesType:
			return walk(v, func(num protowire.Number, typ protowire.Type, _ []byte, _ uint64) error {
				if num == shapeDim && typ == protowire.BytesType {
					rank++
				}
				return nil
			})
		case num == tensorContent && typ == protowire.BytesType:
			content = v
		case num == tensorFloat && typ == protowire.Fixed32Type:
			floats = append(floats, float64(math.Float32frombits(uint32(x))))
		case num == tensorFloat && typ == protowire.BytesType: // packed
			for ; len(v) >= 4; v = v[4:] {
				floats = append(floats, float64(math.Float32frombits(binary.LittleEndian.Uint32(v))))
			}
		case num == tensorDouble && typ == protowire.Fixed64Type:
			floats = append(floats, math.Float64frombits(x))
		case num == tensorDouble && typ == protowire.BytesType: // packed
			for ; len(v) >= 8; v = v[8:] {
				floats = append(floats, math.Float64frombits(binary.LittleEndian.Uint64(v)))
			}
		}
		return nil
	})
	if err != nil || rank != 0 {
		return 0, false, err
	}
	switch {
	case dtype == dtFloat && len(content) == 4:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(content))), true, nil
	case dtype == dtDouble && len(content) == 8:
		return math.Float64frombits(binary.LittleEndian.Uint64(content)), true, nil
	case (dtype == dtFloat || dtype == dtDouble) && len(content) == 0 && len(floats) == 1:
		return floats[0], true, nil
	}
	return 0, false, nil
}

// errBadProto is a message that does not parse.
var errBadProto = errors.New("malformed protobuf")

// walk calls fn with each field of the message b: its number and wire type, and its
// bytes (length-delimited) or its value (varint, fixed32, fixed64). Groups are skipped.
func walk(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", errBadProto, protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var x32 uint32
			x32, n = protowire.ConsumeFixed32(b)
			x = uint64(x32)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", errBadProto, num, protowire.ParseError(n))
		}
		b = b[n:]
		if typ == protowire.StartGroupType {
			continue
		}
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
