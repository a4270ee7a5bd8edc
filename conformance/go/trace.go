package provider

import (
	"context"
	"sync"
	"sync/atomic"
)

// Level is a span's or log line's level.
type Level string

// The levels, most severe first.
const (
	LevelError Level = "ERROR"
	LevelWarn  Level = "WARN"
	LevelInfo  Level = "INFO"
	LevelDebug Level = "DEBUG"
	LevelTrace Level = "TRACE"
)

// Field is one key and its value as text.
type Field struct{ Key, Value string }

// F builds a Field.
func F(key, value string) Field { return Field{key, value} }

var nextSpan uint64

type traceKey struct{}

// scope is what a context knows about the request it serves and the span it is in.
type scope struct {
	send    func(method string, params interface{})
	request uint64
	span    *uint64
}

// Span is an open span; End closes it once.
type Span struct {
	once sync.Once
	send func(method string, params interface{})
	id   uint64
}

func fieldMap(fields []Field) map[string]string {
	m := make(map[string]string, len(fields))
	for _, f := range fields {
		m[f.Key] = f.Value
	}
	return m
}

func withScope(ctx context.Context, s *scope) context.Context {
	return context.WithValue(ctx, traceKey{}, s)
}

// StartSpan opens a span under the context's current span (or directly under the
// request) and returns a context inside it.
// Outside a served request it does nothing and returns a Span whose End is a no-op.
func StartSpan(ctx context.Context, name string, level Level, fields ...Field) (context.Context, *Span) {
	s, _ := ctx.Value(traceKey{}).(*scope)
	if s == nil || s.send == nil {
		return ctx, &Span{}
	}
	id := atomic.AddUint64(&nextSpan, 1)
	s.send("$/span/start", spanStartParams{
		Request: s.request, Span: id, Parent: s.span, Name: name, Level: level, Fields: fieldMap(fields),
	})
	return withScope(ctx, &scope{send: s.send, request: s.request, span: &id}), &Span{send: s.send, id: id}
}

// End closes the span.
func (sp *Span) End() {
	if sp == nil || sp.send == nil {
		return
	}
	sp.once.Do(func() { sp.send("$/span/end", spanEndParams{Span: sp.id}) })
}

// Log emits a log line in the context's current span.
// Outside a served request it does nothing.
func Log(ctx context.Context, level Level, message string, fields ...Field) {
	s, _ := ctx.Value(traceKey{}).(*scope)
	if s == nil || s.send == nil {
		return
	}
	s.send("$/event", eventParams{
		Request: s.request, Span: s.span, Level: level, Message: message, Fields: fieldMap(fields),
	})
}

type spanStartParams struct {
	Request uint64            `json:"request"`
	Span    uint64            `json:"span"`
	Parent  *uint64           `json:"parent"`
	Name    string            `json:"name"`
	Level   Level             `json:"level"`
	Fields  map[string]string `json:"fields"`
}

type spanEndParams struct {
	Span uint64 `json:"span"`
}

type eventParams struct {
	Request uint64            `json:"request"`
	Span    *uint64           `json:"span"`
	Level   Level             `json:"level"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields"`
}
