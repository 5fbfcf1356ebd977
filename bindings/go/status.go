package ctxpack

/*
#include "ctxpack.h"
*/
import "C"

import (
	"fmt"
	"strconv"
)

// Status is the result code of a library call (ctxpack_status). Every Status is also an
// error value, so the constants below serve as sentinels:
//
//	if errors.Is(err, ctxpack.StatusOverflow) { ... }
type Status int32

// The status codes of the C ABI (docs/ffi.md). Values 1-20 are the core engine's error
// kinds; values from 100 on belong to the C layer.
const (
	StatusOK                    Status = C.CTXPACK_OK
	StatusEmptyContent          Status = C.CTXPACK_EMPTY_CONTENT
	StatusEmptyKind             Status = C.CTXPACK_EMPTY_KIND
	StatusEmptySource           Status = C.CTXPACK_EMPTY_SOURCE
	StatusInvalidBudget         Status = C.CTXPACK_INVALID_BUDGET
	StatusPinnedExceedsBudget   Status = C.CTXPACK_PINNED_EXCEEDS_BUDGET
	StatusOverflow              Status = C.CTXPACK_OVERFLOW
	StatusScorerConfig          Status = C.CTXPACK_SCORER_CONFIG
	StatusSlicerConfig          Status = C.CTXPACK_SLICER_CONFIG
	StatusPipelineConfig        Status = C.CTXPACK_PIPELINE_CONFIG
	StatusTableTooLarge         Status = C.CTXPACK_TABLE_TOO_LARGE
	StatusCountRequirementUnmet Status = C.CTXPACK_COUNT_REQUIREMENT_UNMET
	StatusCallback              Status = C.CTXPACK_CALLBACK
	StatusTokenOverflow         Status = C.CTXPACK_TOKEN_OVERFLOW
	StatusInvalidPolicy         Status = C.CTXPACK_INVALID_POLICY
	StatusInvalidArgument       Status = C.CTXPACK_INVALID_ARGUMENT
	StatusOutOfMemory           Status = C.CTXPACK_OUT_OF_MEMORY
	StatusUnsupported           Status = C.CTXPACK_UNSUPPORTED
	StatusCancelled             Status = C.CTXPACK_CANCELLED
	StatusInvalidState          Status = C.CTXPACK_INVALID_STATE
	StatusInvalidRequest        Status = C.CTXPACK_INVALID_REQUEST
	StatusNullArgument          Status = C.CTXPACK_NULL_ARGUMENT
	StatusInvalidUTF8           Status = C.CTXPACK_INVALID_UTF8
	StatusWrongHandleType       Status = C.CTXPACK_WRONG_HANDLE_TYPE
	StatusOutOfRange            Status = C.CTXPACK_OUT_OF_RANGE
	StatusNoReport              Status = C.CTXPACK_NO_REPORT
	StatusPanic                 Status = C.CTXPACK_PANIC
)

// statusNames are the C names of the known statuses; a test checks them against
// ctxpack_status_name for every value the library knows.
var statusNames = map[Status]string{
	StatusOK:                    "CTXPACK_OK",
	StatusEmptyContent:          "CTXPACK_EMPTY_CONTENT",
	StatusEmptyKind:             "CTXPACK_EMPTY_KIND",
	StatusEmptySource:           "CTXPACK_EMPTY_SOURCE",
	StatusInvalidBudget:         "CTXPACK_INVALID_BUDGET",
	StatusPinnedExceedsBudget:   "CTXPACK_PINNED_EXCEEDS_BUDGET",
	StatusOverflow:              "CTXPACK_OVERFLOW",
	StatusScorerConfig:          "CTXPACK_SCORER_CONFIG",
	StatusSlicerConfig:          "CTXPACK_SLICER_CONFIG",
	StatusPipelineConfig:        "CTXPACK_PIPELINE_CONFIG",
	StatusTableTooLarge:         "CTXPACK_TABLE_TOO_LARGE",
	StatusCountRequirementUnmet: "CTXPACK_COUNT_REQUIREMENT_UNMET",
	StatusCallback:              "CTXPACK_CALLBACK",
	StatusTokenOverflow:         "CTXPACK_TOKEN_OVERFLOW",
	StatusInvalidPolicy:         "CTXPACK_INVALID_POLICY",
	StatusInvalidArgument:       "CTXPACK_INVALID_ARGUMENT",
	StatusOutOfMemory:           "CTXPACK_OUT_OF_MEMORY",
	StatusUnsupported:           "CTXPACK_UNSUPPORTED",
	StatusCancelled:             "CTXPACK_CANCELLED",
	StatusInvalidState:          "CTXPACK_INVALID_STATE",
	StatusInvalidRequest:        "CTXPACK_INVALID_REQUEST",
	StatusNullArgument:          "CTXPACK_NULL_ARGUMENT",
	StatusInvalidUTF8:           "CTXPACK_INVALID_UTF8",
	StatusWrongHandleType:       "CTXPACK_WRONG_HANDLE_TYPE",
	StatusOutOfRange:            "CTXPACK_OUT_OF_RANGE",
	StatusNoReport:              "CTXPACK_NO_REPORT",
	StatusPanic:                 "CTXPACK_PANIC",
}

// String returns the C name ("CTXPACK_OVERFLOW"); an unknown value (a newer library)
// gives "CTXPACK_STATUS(n)".
func (s Status) String() string {
	if name, ok := statusNames[s]; ok {
		return name
	}
	return "CTXPACK_STATUS(" + strconv.Itoa(int(s)) + ")"
}

// Format prints a Status as a status, not as an error: its C name for %v and %s (also
// %+v), the quoted name for %q, the number for %d.
func (s Status) Format(f fmt.State, verb rune) {
	switch verb {
	case 'd':
		fmt.Fprintf(f, "%d", int32(s))
	case 'q':
		fmt.Fprintf(f, "%q", s.String())
	default:
		fmt.Fprint(f, s.String())
	}
}

// Error makes a Status usable as a sentinel error.
func (s Status) Error() string { return "ctxpack: " + s.String() }

// Error is the error of a failed call: its status and the library's message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Status.Error()
	}
	return fmt.Sprintf("ctxpack: %s: %s", e.Status.String(), e.Message)
}

// Unwrap returns the Status, so errors.Is(err, StatusX) matches on the status alone.
func (e *Error) Unwrap() error { return e.Status }

// takeError turns a status and the error object the call stored (may be NULL for
// accessors, which report a status only) into a Go error, and frees the object.
func takeError(status C.ctxpack_status, cerr *C.ctxpack_error) error {
	if cerr != nil {
		defer C.ctxpack_error_free(cerr)
	}
	if status == C.CTXPACK_OK {
		return nil
	}
	e := &Error{Status: Status(status)}
	if cerr != nil {
		e.Message = goString(C.ctxpack_error_message(cerr))
	}
	return e
}

// check is takeError for accessors, which return a status without an error object.
func check(status C.ctxpack_status) error { return takeError(status, nil) }

// libraryStatusName is the library's own name for a status value (ctxpack_status_name);
// the tests compare it with statusNames.
func libraryStatusName(s Status) string {
	return C.GoString(C.ctxpack_status_name(C.int32_t(s)))
}
