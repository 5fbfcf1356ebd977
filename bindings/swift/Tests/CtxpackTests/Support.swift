// Helpers shared by the test files: dates, thread-safe state for closures, status
// assertions, and what bindings/swift/run.sh hands to the tests through the environment.
import CCtxpack
import Foundation
import XCTest

@testable import Ctxpack

/// Nanoseconds since the Unix epoch of a UTC date and time (proleptic Gregorian calendar;
/// days from civil date by the era / day-of-era method).
func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0, _ second: Int = 0) -> Int64 {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    let days = era * 146097 + doe - 719468
    return Int64(days * 86400 + hour * 3600 + minute * 60 + second) * 1_000_000_000
}

let nsPerDay: Int64 = 86_400 * 1_000_000_000
let jan2024 = utc(2024, 1, 1)

/// An item `days` days after 2024-01-01 (kind and source left to their defaults).
func dated(_ content: String, tokens: Int64, days: Int) -> Item {
    Item(content: content, tokens: tokens, timestampNs: jan2024 + Int64(days) * nsPerDay)
}

/// Greedy slicing and chronological placing around `scorer`.
func pipeline(_ scorer: Scorer, overflow: OverflowStrategy = .throw) throws -> Pipeline {
    try Pipeline(scorer: scorer, slicer: Slicer.greedy(), placer: Placer.chronological(), overflowStrategy: overflow)
}

/// A value behind a lock, for state that closures share across threads.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value { withLock { $0 } }
}

/// Counts live instances, to see a closure's captured state released exactly once.
final class Tracker: Sendable {
    static let alive = Locked(0)
    init() { Tracker.alive.withLock { $0 += 1 } }
    deinit { Tracker.alive.withLock { $0 -= 1 } }
}

/// An error a closure throws; its description must reach the run's error message.
struct Refusal: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Asserts that `body` throws a CtxpackError with `status` (and a message containing
/// `containing`, when given) whose description is "<C name>: <message>".
func assertThrows(
    _ status: Status, containing: String? = nil, file: StaticString = #filePath, line: UInt = #line,
    _ body: () throws -> Void
) {
    XCTAssertThrowsError(try body(), file: file, line: line) { error in
        guard let e = error as? CtxpackError else { return XCTFail("not a CtxpackError: \(error)", file: file, line: line) }
        XCTAssertEqual(e.status, status, "\(e)", file: file, line: line)
        XCTAssertEqual(e.description, status.name + ": " + e.message, file: file, line: line)
        if let text = containing {
            XCTAssertTrue(e.message.contains(text), "\"\(e.message)\" lacks \"\(text)\"", file: file, line: line)
        }
    }
}

/// An environment variable bindings/swift/run.sh sets; without it (a bare `swift test`)
/// the test that needs it is skipped, which run.sh counts as a failure.
func environment(_ name: String) throws -> String {
    guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
        throw XCTSkip("\(name) is not set: run bindings/swift/run.sh")
    }
    return value
}

/// The repository's root folder (this file is bindings/swift/Tests/CtxpackTests/Support.swift).
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
