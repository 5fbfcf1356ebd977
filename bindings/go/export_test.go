package ctxpack

// Internals the external tests (package ctxpack_test) use.

// LibraryStatusName is ctxpack_status_name.
var LibraryStatusName = libraryStatusName

// LiveCallbacks is the number of Go components the library has not destroyed yet.
func LiveCallbacks() int64 { return liveCallbacks.Load() }
