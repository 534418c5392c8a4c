package gale

import (
	"errors"
	"fmt"
	"time"
)

// FailureClass says whether and when a failed message is worth retrying
// (seed 003). A bolt picks it by failing a tuple with Transient, Delayed or
// Permanent; the class crosses workers with the failure, and a spout's
// retry policy (package retry) reads it from the Fail reason with ClassOf.
type FailureClass uint8

const (
	// ClassTransient: retry soon (a blip: a connection reset, a lock
	// timeout). The class of every error not classified otherwise, and of
	// trees that timed out.
	ClassTransient FailureClass = iota
	// ClassDelayable: retry, but not before a delay the failure names (rate
	// limited, a dependency down for maintenance).
	ClassDelayable
	// ClassPermanent: never retry; retrying cannot help (malformed data, a
	// rejected schema). The message goes to the dead-letter sink at once.
	ClassPermanent
)

func (c FailureClass) String() string {
	switch c {
	case ClassTransient:
		return "transient"
	case ClassDelayable:
		return "delayable"
	case ClassPermanent:
		return "permanent"
	}
	return fmt.Sprintf("FailureClass(%d)", uint8(c))
}

// ClassError is an error with its failure class. Its message is Err's: the
// class travels beside it.
type ClassError struct {
	Class FailureClass
	After time.Duration // for ClassDelayable: retry no sooner than this
	Err   error
}

func (e *ClassError) Error() string {
	if e.Err == nil {
		return e.Class.String() + " failure"
	}
	return e.Err.Error()
}

func (e *ClassError) Unwrap() error { return e.Err }

// Transient marks err as worth retrying soon. Unclassified errors are
// transient too; Transient makes it explicit.
func Transient(err error) error { return &ClassError{Class: ClassTransient, Err: err} }

// Delayed marks err as worth retrying no sooner than after.
func Delayed(err error, after time.Duration) error {
	return &ClassError{Class: ClassDelayable, After: max(after, 0), Err: err}
}

// Permanent marks err as not worth retrying: the spout gives the message
// up (to its dead-letter sink) instead.
func Permanent(err error) error { return &ClassError{Class: ClassPermanent, Err: err} }

// ClassOf returns the failure class of a spout's Fail reason and, for
// ClassDelayable, the delay asked for: the first *ClassError in the chain.
// Timeouts (ErrTimeout), shutdowns (ErrShutdown) and unclassified errors
// are ClassTransient.
func ClassOf(reason error) (FailureClass, time.Duration) {
	var ce *ClassError
	if errors.As(reason, &ce) {
		return ce.Class, ce.After
	}
	return ClassTransient, 0
}
