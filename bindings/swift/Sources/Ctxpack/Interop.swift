import CCtxpack
import Foundation

// The pieces of C interop every wrapper type uses: strings in and out, growing structs,
// and closures as callbacks.

/// A library string as a Swift String (a copy: the library's bytes belong to it).
func string(_ s: ctxpack_str) -> String {
    guard let ptr = s.ptr, s.len > 0 else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: ptr, count: s.len), as: UTF8.self)
}

/// A copy of a C array of `count` doubles (`ptr` may be NULL when `count` is 0).
func doubles(_ ptr: UnsafePointer<Double>?, _ count: Int) -> [Double] {
    Array(UnsafeBufferPointer(start: count > 0 ? ptr : nil, count: count))
}

/// A heap copy of `bytes` as C characters (at least one byte is allocated). Going
/// through raw memory keeps it right whether CChar is signed or not.
func copyCString(_ bytes: [UInt8]) -> UnsafeMutablePointer<CChar> {
    let raw = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
    raw.copyMemory(from: bytes, byteCount: bytes.count)
    return raw.bindMemory(to: CChar.self, capacity: max(bytes.count, 1))
}

/// Owns C copies of the strings and arrays one call reads, and frees them when it goes.
/// Keep it alive across the call with `withExtendedLifetime`. Only plain C structs and
/// bytes go in (they are freed without deinitialisation).
final class CArena {
    private var allocations: [UnsafeMutableRawPointer] = []

    deinit {
        for allocation in allocations { allocation.deallocate() }
    }

    /// `{ptr, len}` of a copy of the UTF-8 bytes; `{NULL, 0}` (the ABI's empty string)
    /// for "". Swift strings are always valid Unicode, so CTXPACK_INVALID_UTF8 cannot
    /// come from here.
    func str(_ s: String) -> ctxpack_str {
        let bytes = Array(s.utf8)
        guard !bytes.isEmpty else { return ctxpack_str(ptr: nil, len: 0) }
        let copy = copyCString(bytes)
        allocations.append(UnsafeMutableRawPointer(copy))
        return ctxpack_str(ptr: UnsafePointer(copy), len: bytes.count)
    }

    /// A C array copy of `values`; nil for an empty array (the ABI accepts NULL with 0).
    func array<T>(_ values: [T]) -> UnsafePointer<T>? {
        guard !values.isEmpty else { return nil }
        let copy = UnsafeMutablePointer<T>.allocate(capacity: values.count)
        copy.initialize(from: values, count: values.count)
        allocations.append(UnsafeMutableRawPointer(copy))
        return UnsafePointer(copy)
    }
}

/// The structs that may grow start with `struct_size`, which must be C's `sizeof`.
/// In Swift that is `MemoryLayout.stride`: `size` leaves out the tail padding, and a
/// value below the first version's size is CTXPACK_INVALID_ARGUMENT (docs/ffi.md,
/// "Structs that grow"). Each struct is set up by its `ctxpack_<struct>_init` function:
/// every byte zero (the `reserved` bytes included) and `struct_size` set.
protocol GrowingCStruct {
    init()
    /// The struct's `ctxpack_<struct>_init` function.
    static func cInit(_ value: UnsafeMutablePointer<Self>, _ size: Int) -> Int32
}

extension GrowingCStruct {
    static func sized() -> Self {
        var value = Self()
        _ = cInit(&value, MemoryLayout<Self>.stride)  // cannot fail for this size
        return value
    }
}

extension ctxpack_item_desc: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_item_desc_init(v, n) }
}
extension ctxpack_budget_desc: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_budget_desc_init(v, n) }
}
extension ctxpack_pipeline_options: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_pipeline_options_init(v, n) }
}
extension ctxpack_run_options: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_run_options_init(v, n) }
}
extension ctxpack_decay_config: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_decay_config_init(v, n) }
}
extension ctxpack_report_summary: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_report_summary_init(v, n) }
}
extension ctxpack_included_entry: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_included_entry_init(v, n) }
}
extension ctxpack_pruned_form: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_pruned_form_init(v, n) }
}
extension ctxpack_variant_desc: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_variant_desc_init(v, n) }
}
extension ctxpack_excluded_entry: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_excluded_entry_init(v, n) }
}
extension ctxpack_trace_event: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_trace_event_init(v, n) }
}
extension ctxpack_shortfall: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_shortfall_init(v, n) }
}
extension ctxpack_group_entry: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_group_entry_init(v, n) }
}

/// A flag byte of the C structs: 0 or 1.
func flag(_ value: Bool) -> UInt8 { value ? 1 : 0 }

// MARK: - Closures as callbacks

/// A closure on the heap, handed to the library as `user_data`. The component owns one
/// retain (`Unmanaged.passRetained`) and gives it back through `releaseCallbackBox`, the
/// ABI's `destroy`, when its last reference goes.
final class CallbackBox<F> {
    let fn: F
    init(_ fn: F) { self.fn = fn }

    static func unbox(_ userData: UnsafeMutableRawPointer?) -> F {
        Unmanaged<CallbackBox<F>>.fromOpaque(userData!).takeUnretainedValue().fn
    }
}

/// The ABI's `destroy` for every custom component.
let releaseCallbackBox: ctxpack_destroy_fn = { userData in
    Unmanaged<AnyObject>.fromOpaque(userData!).release()
}

/// Creates a custom component: `construct(userData, out, error)` calls the C constructor.
/// On success the component owns the box; on failure the ABI leaves `user_data` with the
/// caller, so the retain is given back here.
func createCustom<F>(
    _ fn: F,
    _ construct: (UnsafeMutableRawPointer, UnsafeMutablePointer<OpaquePointer?>, UnsafeMutablePointer<OpaquePointer?>)
        -> Int32
) throws -> OpaquePointer {
    let userData = Unmanaged.passRetained(CallbackBox(fn)).toOpaque()
    do {
        return try create { construct(userData, $0, $1) }
    } catch {
        Unmanaged<CallbackBox<F>>.fromOpaque(userData).release()
        throw error
    }
}

/// Runs a callback body. A Swift error becomes the callback's failure: the library is
/// told through `failure.message`, and the run fails with CTXPACK_CALLBACK and that text.
func reportingFailure(_ failure: UnsafeMutablePointer<ctxpack_callback_error>?, _ body: () throws -> Void) -> Int32 {
    do {
        try body()
        return 0
    } catch {
        failure?.pointee.message = CallbackMessage.current.store(String(describing: error))
        return 1
    }
}

/// The text of a callback's failure. The library copies it as soon as the callback
/// returns, so it only has to outlive the call: one buffer per thread, replaced by the
/// next failure on that thread.
final class CallbackMessage {
    private var buffer: UnsafeMutablePointer<CChar>?

    deinit { buffer?.deallocate() }

    static var current: CallbackMessage {
        let key = "ctxpack.CallbackMessage"
        let threadData = Thread.current.threadDictionary
        if let message = threadData[key] as? CallbackMessage { return message }
        let message = CallbackMessage()
        threadData[key] = message
        return message
    }

    func store(_ text: String) -> ctxpack_str {
        buffer?.deallocate()
        let bytes = Array(text.utf8)
        let copy = copyCString(bytes)
        buffer = copy
        return ctxpack_str(ptr: UnsafePointer(copy), len: bytes.count)
    }
}
