package provider

import (
	"errors"
	"fmt"
)

// ErrorKind is one of the contract's four error kinds.
type ErrorKind string

// The four kinds.
const (
	NotFound      ErrorKind = "NotFound"
	Transient     ErrorKind = "Transient"
	Permanent     ErrorKind = "Permanent"
	QuotaExceeded ErrorKind = "QuotaExceeded"
)

// Op is the operation an error belongs to.
type Op string

// The operations.
const (
	OpCreate    Op = "Create"
	OpGet       Op = "Get"
	OpDelete    Op = "Delete"
	OpListByTag Op = "ListByTag"
	OpCheck     Op = "Check"
)

// Quota says what is short; it is present exactly on QuotaExceeded errors.
type Quota struct {
	What      string `json:"what"`
	Available uint64 `json:"available"`
	Needed    uint64 `json:"needed"`
}

// Error is a contract error.
// Its message and its cause chain must not carry the cloud-init payload or key material.
type Error struct {
	Provider string
	Op       Op
	Kind     ErrorKind
	Message  string
	Quota    *Quota
	Cause    error
}

// NewError builds a contract error of kind k; cause may be nil.
func NewError(provider string, op Op, k ErrorKind, message string, cause error) *Error {
	return &Error{Provider: provider, Op: op, Kind: k, Message: message, Cause: cause}
}

// NewQuotaError builds a QuotaExceeded error with its quota fields.
func NewQuotaError(provider string, op Op, q Quota, cause error) *Error {
	msg := fmt.Sprintf("%s: %d available, %d needed", q.What, q.Available, q.Needed)
	return &Error{Provider: provider, Op: op, Kind: QuotaExceeded, Message: msg, Quota: &q, Cause: cause}
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s: %s", e.Provider, e.Op, e.Kind, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Chain is the cause chain below the error, outermost first, each entry the text of
// one link.
func (e *Error) Chain() []string {
	chain := []string{}
	for c := e.Cause; c != nil; c = errors.Unwrap(c) {
		chain = append(chain, c.Error())
	}
	return chain
}

// KindOf is the contract kind of err, and false when err is no contract error.
func KindOf(err error) (ErrorKind, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, true
	}
	return "", false
}

// HookError is a fixture hook's failure; its message becomes the rule's Error reason.
type HookError struct{ Message string }

func (e *HookError) Error() string { return e.Message }

// Hookf builds a HookError.
func Hookf(format string, args ...interface{}) error {
	return &HookError{Message: fmt.Sprintf(format, args...)}
}
