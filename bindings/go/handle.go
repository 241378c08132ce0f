package dptrain

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	"dptrain.org/dptrain/internal/swig"
)

// call runs f, one or more calls into the generated layer, and returns the error the C++ side recorded.
//
// The generated wrappers never panic on a library error: they leave the status and message in a
// per-thread slot (see bindings/swig/go.i), which is read here on the same OS thread. A panic from the
// generated layer itself (which should not happen) is recovered too, so none crosses the API.
func call(op string, f func()) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		if r := recover(); r != nil {
			swig.TakeErrorStatus() // whatever was recorded belongs to this failed call
			err = newError(op, StatusInternal, "the generated binding layer panicked: %v", r)
		}
	}()
	f()
	if s := swig.TakeErrorStatus(); s != 0 {
		return libraryError(op, Status(s), swig.TakeErrorMessage())
	}
	return nil
}

// handle guards one native object: it is destroyed exactly once, only when it is closed and no call
// and no dependent object uses it, so neither Close (from any goroutine, a finalizer or a progress
// callback) nor concurrent misuse can free it under a running call.
type handle struct {
	kind string // "Trainer", ...

	mu        sync.Mutex
	idle      sync.Cond // signalled when a nested call ends
	closed    bool
	destroyed bool
	shared    int  // shared calls in flight
	exclusive bool // an exclusive call in flight
	callback  bool // the exclusive call (Fit) is paused in a progress callback
	nested    bool // a call made from that callback is in flight
	deps      int  // dependent objects (trainers of a context)
	destroy   func()
}

func newHandle(kind string, destroy func()) *handle {
	h := &handle{kind: kind, destroy: destroy}
	h.idle.L = &h.mu
	return h
}

// access is how a call uses a handle.
type access int

const (
	shared     access = iota // reads: exclude only exclusive calls
	exclusive                // modifications: exclude every other call
	reentrant                // exclusive, but also allowed from the progress callback of a running Fit
	nestedCall               // (a token: a reentrant call that runs inside the callback)
)

// acquire starts a call and returns the token to release. It never blocks: a conflicting call is an
// error wrapping ErrBusy.
func (h *handle) acquire(op string, a access) (access, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return a, &Error{Op: op, Status: StatusInvalidState, Category: CategoryInvalidArgument,
			Message: "the " + h.kind + " is closed", Err: ErrClosed}
	}
	switch {
	case a == reentrant && h.exclusive && h.callback && !h.nested:
		h.nested = true
		return nestedCall, nil
	case h.exclusive || (a != shared && h.shared > 0):
		return a, &Error{Op: op, Status: StatusBusy, Category: CategoryInvalidArgument,
			Message: "the " + h.kind + " is in use by another call (a " + h.kind + " is used by one goroutine " +
				"at a time; its progress callback may only read it and save checkpoints)", Err: ErrBusy}
	case a == shared:
		h.shared++
	default:
		h.exclusive = true
	}
	return a, nil
}

// release ends a call started by acquire.
func (h *handle) release(token access) {
	h.mu.Lock()
	switch token {
	case shared:
		h.shared--
	case nestedCall:
		h.nested = false
		h.idle.Broadcast()
	default:
		h.exclusive = false
	}
	h.finish()
}

// enterCallback opens the window in which reentrant calls may run (the exclusive call is paused in its
// progress callback); exitCallback closes it, waiting for a nested call still running.
func (h *handle) enterCallback() {
	h.mu.Lock()
	h.callback = true
	h.mu.Unlock()
}

func (h *handle) exitCallback() {
	h.mu.Lock()
	h.callback = false
	for h.nested {
		h.idle.Wait()
	}
	h.mu.Unlock()
}

// addDep records a dependent object (call between acquire and release).
func (h *handle) addDep() {
	h.mu.Lock()
	h.deps++
	h.mu.Unlock()
}

// releaseDep drops a dependent object; the handle is destroyed if it was closed and is now unused.
func (h *handle) releaseDep() {
	h.mu.Lock()
	h.deps--
	h.finish()
}

// close marks the handle closed and destroys it now, or when its last call or dependent is done.
func (h *handle) close() {
	h.mu.Lock()
	h.closed = true
	h.finish()
}

func (h *handle) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// finish unlocks h.mu and destroys the object if it is closed and unused.
func (h *handle) finish() {
	ready := h.closed && !h.destroyed && !h.exclusive && !h.nested && h.shared == 0 && h.deps == 0
	if ready {
		h.destroyed = true
	}
	h.mu.Unlock()
	if ready && h.destroy != nil {
		h.destroy()
	}
}

// count converts a Go size to the C size_t (int64 in the generated layer); negative sizes are errors.
func toSize(op, name string, v int) (int64, error) {
	if v < 0 {
		return 0, newError(op, StatusOutOfRange, "%s is negative (%d)", name, v)
	}
	return int64(v), nil
}

// cString checks a string passed as a C string: it may not contain a NUL byte.
func cString(op, name, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return newError(op, StatusInvalidArgument, "%s contains a NUL byte: %q", name, s)
	}
	return nil
}

// nilSlice reports a nil slice argument.
func nilSlice(op, name string) error {
	return newError(op, StatusNullPointer, "%s is nil", name)
}

func nilHandle(op, name string) error {
	return newError(op, StatusNullPointer, "%s is nil", name)
}

// kindName formats an enum value that has no name.
func kindName(kind string, v int) string { return fmt.Sprintf("%s(%d)", kind, v) }
