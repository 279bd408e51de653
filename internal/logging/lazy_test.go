package logging

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// counted counts the times zap encodes it.
type counted struct{ n *int }

func (c counted) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	*c.n++
	enc.AddString("job", "mnist")
	return nil
}

// TestLazyFields checks that a logger's fields are encoded only when it writes, once,
// and appear as zap writes them without LazyFields.
func TestLazyFields(t *testing.T) {
	var lazyOut, eagerOut bytes.Buffer
	newLogger := func(out *bytes.Buffer, wrap bool) *zap.Logger {
		enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg", LevelKey: "level", EncodeLevel: zapcore.LowercaseLevelEncoder})
		var core zapcore.Core = zapcore.NewCore(enc, zapcore.AddSync(out), zapcore.InfoLevel)
		if wrap {
			core = LazyFields(core)
		}
		return zap.New(core)
	}
	encoded := 0
	log := func(l *zap.Logger) {
		job := l.With(zap.Object("tfjob", counted{&encoded})).With(zap.String("reconcileID", "r1"))
		job.Debug("not written")
		job.Info("reconciled", zap.Int("pods", 4))
		job.Info("again")
		job.With(zap.String("replica", "worker-0")).Warn("restarted")
	}
	log(newLogger(&lazyOut, true))
	lazyEncodings := encoded
	log(newLogger(&eagerOut, false))

	if lazyOut.String() != eagerOut.String() {
		t.Errorf("lazy fields wrote:\n%s\nzap writes:\n%s", lazyOut.String(), eagerOut.String())
	}
	if lines := strings.Count(lazyOut.String(), "\n"); lines != 3 {
		t.Errorf("%d lines written, want 3:\n%s", lines, lazyOut.String())
	}
	// Once for the logger's two Info lines, once for the logger made from it.
	if lazyEncodings != 2 {
		t.Errorf("the job's field was encoded %d times, want 2", lazyEncodings)
	}

	encoded = 0
	quiet := newLogger(&lazyOut, true)
	for range 100 {
		quiet.With(zap.Object("tfjob", counted{&encoded})).Debug("not written")
	}
	if encoded != 0 {
		t.Errorf("fields of loggers writing nothing were encoded %d times, want 0", encoded)
	}
}
