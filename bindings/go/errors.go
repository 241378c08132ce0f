package dptrain

import (
	"errors"
	"fmt"

	"dptrain.org/dptrain/internal/swig"
)

// Status is a result code of the C API (dpt_status). The values are pinned forever; the thousands digit
// is the Category. A Status is also an error value, so errors.Is(err, StatusSizeMismatch) works.
type Status int

// The statuses of the C API.
const (
	StatusOK              Status = 0    // success
	StatusInvalidArgument Status = 1000 // an argument has a value the call does not accept
	StatusNullPointer     Status = 1001 // a required handle, slice or pointer is nil
	StatusOutOfRange      Status = 1002 // an index, label or count lies outside its valid range
	StatusSizeMismatch    Status = 1003 // a slice length does not match the shape the call expects
	StatusInvalidState    Status = 1004 // the object is not in a state that allows this call
	StatusBufferTooSmall  Status = 1005 // an output buffer is too small
	StatusNonFinite       Status = 1006 // a NaN or infinity in inputs, loss or gradients (NonFiniteError)
	StatusBusy            Status = 1007 // another thread is in a call on this handle; nothing was done
	StatusUnsupported     Status = 2000 // the operation or configuration is not supported
	StatusDevice          Status = 3000 // a device failed
	StatusOutOfMemory     Status = 3001 // a device (or the host) ran out of memory
	StatusDeviceNotFound  Status = 3002 // a requested device does not exist
	StatusCommunication   Status = 4000 // a collective operation failed
	StatusTimeout         Status = 4001 // an operation did not complete in time
	StatusIO              Status = 5000 // a file could not be opened, read or written
	StatusFormat          Status = 5001 // a file or buffer has invalid content
	StatusInternal        Status = 9000 // a bug in dptrain
)

// String returns the library's name of the status, e.g. "size mismatch".
func (s Status) String() string {
	text := ""
	if err := call("Status.String", func() { text = swig.StatusString(int(s)) }); err != nil {
		return fmt.Sprintf("status %d", int(s))
	}
	return text
}

// Error makes a Status usable as an errors.Is target.
func (s Status) Error() string { return "dptrain: " + s.String() }

// Category is the status rounded down to a multiple of 1000.
func (s Status) Category() Category { return Category(int(s) / 1000 * 1000) }

// Category groups statuses (dpt_status_category). A Category is also an error value: the sentinels
// ErrInvalidArgument ... ErrInternal are categories, matched by errors.Is against any *Error.
type Category int

// The status categories.
const (
	CategoryNone            Category = 0
	CategoryInvalidArgument Category = 1000
	CategoryUnsupported     Category = 2000
	CategoryDevice          Category = 3000
	CategoryCommunication   Category = 4000
	CategoryIO              Category = 5000
	CategoryInternal        Category = 9000
)

// String names the category.
func (c Category) String() string {
	switch c {
	case CategoryNone:
		return "ok"
	case CategoryInvalidArgument:
		return "invalid argument"
	case CategoryUnsupported:
		return "unsupported"
	case CategoryDevice:
		return "device"
	case CategoryCommunication:
		return "communication"
	case CategoryIO:
		return "I/O or format"
	case CategoryInternal:
		return "internal"
	}
	return fmt.Sprintf("category %d", int(c))
}

// Error makes a Category usable as an errors.Is target.
func (c Category) Error() string { return "dptrain: " + c.String() + " error" }

// Category sentinels: errors.Is(err, dptrain.ErrInvalidArgument) is true for every *Error of that category.
var (
	ErrInvalidArgument error = CategoryInvalidArgument
	ErrUnsupported     error = CategoryUnsupported
	ErrDevice          error = CategoryDevice
	ErrCommunication   error = CategoryCommunication
	ErrIO              error = CategoryIO
	ErrInternal        error = CategoryInternal
)

// ErrClosed is wrapped by the *Error returned when a closed Context, Model, Dataset or Trainer is used.
var ErrClosed = errors.New("dptrain: use of a closed handle")

// ErrBusy is wrapped by the *Error returned when a Trainer or Model is used by two calls at once (for
// example from its own progress callback, or from two goroutines): found by the Go layer (status
// StatusInvalidState) or by the library (StatusBusy).
var ErrBusy = errors.New("dptrain: handle in use by another call")

// Error is a failed call: the status, its category and the library's one-line message.
type Error struct {
	Op       string   // the Go method that failed, e.g. "Trainer.Step"
	Status   Status   // the library's status (or the binding's, for checks made in Go)
	Category Category // Status rounded down to 1000s
	Message  string   // the library's message (dpt_last_error_message) or the binding's
	Err      error    // the underlying cause, e.g. ErrClosed; may be nil
}

func (e *Error) Error() string {
	return "dptrain: " + e.Op + ": " + e.Status.String() + ": " + e.Message
}

// Unwrap returns the underlying cause (ErrClosed, ErrBusy, or nil).
func (e *Error) Unwrap() error { return e.Err }

// Is matches a Status (exactly) or a Category (the status's category).
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case Status:
		return e.Status == t
	case Category:
		return e.Category == t
	}
	return false
}

// libraryError builds the *Error of a failed library call. A StatusBusy wraps ErrBusy, like the Go layer's
// own busy errors, so that errors.Is(err, ErrBusy) holds whichever side noticed the conflict.
func libraryError(op string, s Status, message string) *Error {
	e := &Error{Op: op, Status: s, Category: s.Category(), Message: message}
	if s == StatusBusy {
		e.Err = ErrBusy
	}
	return e
}

// newError builds an *Error for a check made in Go.
func newError(op string, status Status, format string, args ...interface{}) *Error {
	return &Error{Op: op, Status: status, Category: status.Category(), Message: fmt.Sprintf(format, args...)}
}

// CallbackError is returned by Trainer.Fit when the progress callback panicked or called runtime.Goexit:
// training stopped at that report. Unwrap returns the panic value when it is an error.
type CallbackError struct {
	Value interface{} // the value passed to panic (nil after runtime.Goexit)
	Stack []byte      // the callback goroutine's stack at the panic
}

func (e *CallbackError) Error() string {
	if e.Value == nil {
		return "dptrain: Trainer.Fit: progress callback called runtime.Goexit; training stopped"
	}
	return fmt.Sprintf("dptrain: Trainer.Fit: progress callback panicked: %v; training stopped", e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *CallbackError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}
