import CCtxpack

/// A `ctxpack_status` value. A struct rather than an enum so that a status added by a
/// newer library still has a value (and a name, from the library).
public struct Status: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let ok = Status(rawValue: 0)
    public static let emptyContent = Status(rawValue: 1)
    public static let emptyKind = Status(rawValue: 2)
    public static let emptySource = Status(rawValue: 3)
    public static let invalidBudget = Status(rawValue: 4)
    public static let pinnedExceedsBudget = Status(rawValue: 5)
    public static let overflow = Status(rawValue: 6)
    public static let scorerConfig = Status(rawValue: 7)
    public static let slicerConfig = Status(rawValue: 8)
    public static let pipelineConfig = Status(rawValue: 9)
    public static let tableTooLarge = Status(rawValue: 10)
    public static let countRequirementUnmet = Status(rawValue: 11)
    public static let callback = Status(rawValue: 12)
    public static let tokenOverflow = Status(rawValue: 13)
    public static let invalidPolicy = Status(rawValue: 14)
    public static let invalidArgument = Status(rawValue: 15)
    public static let outOfMemory = Status(rawValue: 16)
    public static let unsupported = Status(rawValue: 17)
    public static let cancelled = Status(rawValue: 18)
    public static let invalidState = Status(rawValue: 19)
    public static let invalidRequest = Status(rawValue: 20)
    public static let nullArgument = Status(rawValue: 100)
    public static let invalidUtf8 = Status(rawValue: 101)
    public static let wrongHandleType = Status(rawValue: 102)
    public static let outOfRange = Status(rawValue: 103)
    public static let noReport = Status(rawValue: 104)
    public static let panic = Status(rawValue: 105)

    /// Every status of this version of the header, in numeric order.
    public static let all: [Status] = [
        .ok, .emptyContent, .emptyKind, .emptySource, .invalidBudget, .pinnedExceedsBudget, .overflow,
        .scorerConfig, .slicerConfig, .pipelineConfig, .tableTooLarge, .countRequirementUnmet, .callback,
        .tokenOverflow, .invalidPolicy, .invalidArgument, .outOfMemory, .unsupported, .cancelled,
        .invalidState, .invalidRequest, .nullArgument, .invalidUtf8, .wrongHandleType,
        .outOfRange, .noReport, .panic,
    ]

    /// The C name, `"CTXPACK_NO_REPORT"`, from the library (`"CTXPACK_UNKNOWN_STATUS"`
    /// for a number it does not know).
    public var name: String { String(cString: ctxpack_status_name(rawValue)) }
    public var description: String { name }
}

/// A failed call: its status and the library's message.
public struct CtxpackError: Error, Sendable, CustomStringConvertible {
    public let status: Status
    public let message: String

    public init(status: Status, message: String) {
        self.status = status
        self.message = message
    }

    public var description: String { "\(status.name): \(message)" }
}

// MARK: - Calling the C functions

/// Throws the error of a C call that returned `status`; frees `error` (may be nil).
func check(_ status: Int32, _ error: OpaquePointer? = nil, _ function: String = "") throws {
    defer { ctxpack_error_free(error) }
    guard status != 0 else { return }
    if let error = error {
        throw CtxpackError(status: Status(rawValue: ctxpack_error_code(error)),
                           message: string(ctxpack_error_message(error)))
    }
    throw CtxpackError(status: Status(rawValue: status), message: "\(function) failed")
}

/// Calls a fallible C function that takes a trailing `ctxpack_error **`.
func call(_ body: (UnsafeMutablePointer<OpaquePointer?>) -> Int32) throws {
    var error: OpaquePointer? = nil
    let status = body(&error)
    try check(status, error)
}

/// Calls a C constructor `(..., T **out, ctxpack_error **)` and returns the new handle.
func create(_ body: (UnsafeMutablePointer<OpaquePointer?>, UnsafeMutablePointer<OpaquePointer?>) -> Int32) throws
    -> OpaquePointer
{
    var out: OpaquePointer? = nil
    try call { body(&out, $0) }
    guard let handle = out else { throw CtxpackError(status: .nullArgument, message: "no handle returned") }
    return handle
}

// MARK: - Versions

/// The version of the loaded library and of the header this package was compiled with.
public enum Library {
    /// The loaded library's version, `"MAJOR.MINOR.PATCH"`.
    public static var version: String { String(cString: ctxpack_version()) }
    /// The loaded library's version as `MAJOR * 10000 + MINOR * 100 + PATCH`.
    public static var versionNumber: UInt32 { ctxpack_version_number() }
    /// The header's version number (`CTXPACK_VERSION_NUMBER`): a program that needs what
    /// its header declares checks `versionNumber >= headerVersionNumber`.
    public static let headerVersionNumber = UInt32(CTXPACK_VERSION_NUMBER)
}
