// Package logging holds what tfk8s's processes add to their zap loggers.
package logging

import (
	"slices"
	"sync"

	"go.uber.org/zap/zapcore"
)

// LazyFields makes a core's With cost nothing until an entry is written: zap encodes
// a logger's fields as soon as they are added, into a buffer of at least 1 KB. The
// controller adds the job's namespace and name, and controller-runtime the reconcile's
// ID, to a logger at every reconcile, and at the default level nearly none of those
// loggers writes: that was a tenth of all the controller allocated while it caught up
// with 5,000 jobs. Fields are encoded, in the order they were added, on the first entry
// a logger writes.
func LazyFields(core zapcore.Core) zapcore.Core {
	return &lazyCore{base: core}
}

// lazyCore is base with fields yet to be added.
type lazyCore struct {
	base   zapcore.Core
	fields []zapcore.Field

	once sync.Once
	core zapcore.Core
}

// Enabled answers for the base core: fields do not change what is enabled.
func (c *lazyCore) Enabled(level zapcore.Level) bool { return c.base.Enabled(level) }

// With keeps the fields to add later.
func (c *lazyCore) With(fields []zapcore.Field) zapcore.Core {
	return &lazyCore{base: c.base, fields: append(slices.Clip(c.fields), fields...)}
}

// Check adds the fields, only for an entry of an enabled level.
func (c *lazyCore) Check(entry zapcore.Entry, checked *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !c.base.Enabled(entry.Level) {
		return checked
	}
	return c.withFields().Check(entry, checked)
}

// Write writes the entry with the logger's fields.
func (c *lazyCore) Write(entry zapcore.Entry, fields []zapcore.Field) error {
	return c.withFields().Write(entry, fields)
}

// Sync flushes the base core.
func (c *lazyCore) Sync() error { return c.base.Sync() }

// withFields is the base core with the fields added, made once.
func (c *lazyCore) withFields() zapcore.Core {
	c.once.Do(func() {
		c.core = c.base
		if len(c.fields) > 0 {
			c.core = c.base.With(c.fields)
		}
	})
	return c.core
}
