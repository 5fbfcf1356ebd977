// Swift's own types at the boundary: Date and Duration instead of raw nanoseconds, structs
// instead of tuples, and item lists shared by tasks.
import Foundation
import XCTest

@testable import Ctxpack

final class IdiomTests: XCTestCase {
    /// The timestamps a scorer sees, by content.
    func seenTimestamps(_ items: Items) throws -> [String: Int64?] {
        let seen = Locked<[String: Int64?]>([:])
        let scorer = try Scorer.custom { items, index in
            let item = items[index]
            seen.withLock { $0[item.content] = item.timestampNs }
            // The view's Date is the same instant.
            if let ns = item.timestampNs {
                XCTAssertEqual(item.timestamp!.timeIntervalSince1970, Double(ns) / 1e9, accuracy: 1e-6)
            } else {
                XCTAssertNil(item.timestamp)
            }
            return 1
        }
        _ = try pipeline(scorer).run(items, budget: Budget(maxTokens: 1000, targetTokens: 1000))
        return seen.current
    }

    func testItemTimestampsAsDatesOrExactNanoseconds() throws {
        // 2024-02-29 12:30:00.25 UTC: a quarter second is exact in a Date.
        let leapNoon = Date(timeIntervalSince1970: 1_709_209_800.25)
        let before1970 = Date(timeIntervalSince1970: -86_400.5)  // 1969-12-30 23:59:59.5
        var edited = Item(content: "edited", tokens: 1)
        edited.timestamp = leapNoon
        XCTAssertEqual(edited.timestampNs, 1_709_209_800_250_000_000)
        edited.timestampNs = 1_709_209_800_123_456_789  // exact, below a Date's precision
        XCTAssertEqual(edited.timestampNs, 1_709_209_800_123_456_789)
        XCTAssertEqual(edited.timestamp!.timeIntervalSince1970, 1_709_209_800.123_456_789, accuracy: 1e-6)
        let items = try Items([
            Item(content: "date", tokens: 1, timestamp: leapNoon),
            Item(content: "old", tokens: 1, timestamp: before1970),
            Item(content: "ns", tokens: 1, timestampNs: utc(2024, 2, 29, 12, 30) + 7),
            Item(content: "none", tokens: 1),
            edited,
        ])
        let seen = try seenTimestamps(items)
        XCTAssertEqual(seen["date"], utc(2024, 2, 29, 12, 30) + 250_000_000)
        XCTAssertEqual(seen["old"], -86_400_500_000_000)
        XCTAssertEqual(seen["ns"], utc(2024, 2, 29, 12, 30) + 7)
        XCTAssertEqual(seen["none"], Optional<Int64>.none)
        XCTAssertEqual(seen["edited"], 1_709_209_800_123_456_789)
    }

    func testDatesBeyondSixtyFourBitNanosecondsAreRefused() throws {
        let items = try Items()
        // Year 4001 is past 2262, the last year 64-bit nanoseconds since 1970 reach.
        let far = Item(content: "far", tokens: 1, timestamp: .distantFuture)
        XCTAssertNil(far.timestampNs)
        assertThrows(.invalidArgument, containing: "years 1677 to 2262") { try items.append(far) }
        assertThrows(.invalidArgument, containing: "item 1: ") {
            try items.append(contentsOf: [Item(content: "fine", tokens: 1), far])
        }
        XCTAssertEqual(try items.count, 0)
        // The last representable instants are fine.
        try items.append(Item(content: "edge", tokens: 1, timestampNs: Int64.max))
        XCTAssertEqual(try seenTimestamps(items)["edge"], Int64.max)
    }

    func testDecayDurationsAndFixedNow() throws {
        let items = try Items([dated("old", tokens: 1, days: 0), dated("new", tokens: 1, days: 10)])
        let now = Date(timeIntervalSince1970: Double(jan2024 + 10 * nsPerDay) / 1e9)
        // Half-life 10 days: the 10-day-old item scores 0.5, today's 1.
        let halfLife = try Scorer.decay(.exponential(halfLife: .seconds(10 * 86_400)), fixedNow: now)
        XCTAssertEqual(try halfLife.score(items), [0.5, 1.0])
        let exact = try Scorer.decay(.exponential(halfLife: .nanoseconds(10 * nsPerDay)),
                                     fixedNowNs: jan2024 + 10 * nsPerDay)
        XCTAssertEqual(try exact.score(items), [0.5, 1.0])
        // A 5-day step window: the old item falls in the second one.
        let step = try Scorer.decay(
            .step([DecayWindow(maxAge: .seconds(5 * 86_400), score: 0.75), DecayWindow(maxAge: .seconds(20 * 86_400), score: 0.25)]),
            fixedNow: now)
        XCTAssertEqual(try step.score(items), [0.25, 0.75])
        // Durations and dates beyond 64-bit nanoseconds.
        assertThrows(.invalidArgument) { _ = try Scorer.decay(.window(maxAge: .seconds(Int64.max))) }
        assertThrows(.invalidArgument) {
            _ = try Scorer.decay(.window(maxAge: .seconds(1)), fixedNow: .distantPast)
        }
    }

    func testStructsWhereTuplesWere() throws {
        // A pinned item of 50 tokens over a target of 40.
        let pinned = try Items([Item(content: "p", tokens: 50, pinned: true), dated("a", tokens: 10, days: 0)])
        let proceed = try pipeline(Scorer.recency(), overflow: .proceed)
        let overflow = try XCTUnwrap(proceed.run(pinned, budget: Budget(maxTokens: 100, targetTokens: 40)).overflow)
        XCTAssertEqual(overflow, Overflow(tokensOverBudget: 10, items: [0]))

        let items = try Items([dated("a", tokens: 50, days: 0), dated("b", tokens: 30, days: 1)])

        let traced = try pipeline(Scorer.recency()).run(items, budget: Budget(maxTokens: 100, targetTokens: 100),
                                                         trace: .stage)
        for event in try XCTUnwrap(traced.report).events {
            let (seconds, attoseconds) = event.duration.components
            XCTAssertEqual(Double(seconds) * 1e3 + Double(attoseconds) / 1e15, event.durationMs, accuracy: 1e-6)
        }

        let composite = try Scorer.composite([
            WeightedScorer(Scorer.recency(), weight: 3), WeightedScorer(Scorer.custom { _, _ in 0.5 }, weight: 1),
        ])
        // Recency 0 and 1, the closure 0.5 for both: (3r + 0.5) / 4.
        XCTAssertEqual(try composite.score(items), [0.125, 0.875])
    }

    func testItemViewsDoNotOutliveTheirCallback() throws {
        // Views smuggled out of each kind of callback (through a lock that the compiler
        // cannot see through) are valid inside and closed after it.
        let kept = Locked<[ItemView]>([])
        let keptLists = Locked<[ItemsView]>([])
        @Sendable func keep(_ items: ItemsView) {
            XCTAssertTrue(items.isValid)
            XCTAssertTrue(items[0].isValid)
            keptLists.withLock { $0.append(items) }
            kept.withLock { $0.append(items[0]) }
        }
        let scorer = try Scorer.custom { items, index in
            keep(items)
            return Double(index)
        }
        let batch = try Scorer.customBatch { items in
            keep(items)
            return items.map { _ in 1 }
        }
        let slicer = try Slicer.custom { items, _, _, _ in
            keep(items)
            return Array(items.indices)
        }
        let placer = try Placer.custom { items, _ in
            keep(items)
            return Array(items.indices)
        }
        let items = try Items([dated("a", tokens: 1, days: 0), dated("b", tokens: 1, days: 1)])
        let budget = try Budget(maxTokens: 10, targetTokens: 10)
        _ = try Pipeline(scorer: scorer, slicer: slicer, placer: placer).run(items, budget: budget)
        _ = try pipeline(batch).run(items, budget: budget)
        // Two per-item scorer calls, one slicer, one placer, one batch call.
        XCTAssertEqual(kept.current.count, 5)
        XCTAssertTrue(kept.current.allSatisfy { !$0.isValid })
        XCTAssertTrue(keptLists.current.allSatisfy { !$0.isValid })
        // Reading one now would stop the program (a precondition), not read freed memory:
        // `testReadingAnEscapedViewStopsTheProgram` runs that in a child process.
    }

    /// Reads a view inside its callback, then, in the child process that
    /// `testReadingAnEscapedViewStopsTheProgram` starts (CTXPACK_READ_ESCAPED_VIEW=1), once
    /// more after the callback returned, which must stop the process.
    func testEscapedViewRead() throws {
        let kept = Locked<ItemView?>(nil)
        let scorer = try Scorer.custom { items, _ in
            XCTAssertEqual(items[0].content, "a")
            kept.withLock { $0 = items[0] }
            return 1
        }
        _ = try pipeline(scorer).run(Items([dated("a", tokens: 1, days: 0)]), budget: Budget(maxTokens: 5, targetTokens: 5))
        let view = try XCTUnwrap(kept.current)
        XCTAssertFalse(view.isValid)
        if ProcessInfo.processInfo.environment["CTXPACK_READ_ESCAPED_VIEW"] == "1" {
            print("escaped view content: \(view.content)")  // must not be reached
        }
    }

    func testReadingAnEscapedViewStopsTheProgram() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["CtxpackTests.IdiomTests/testEscapedViewRead"]
        child.environment = ProcessInfo.processInfo.environment.merging(["CTXPACK_READ_ESCAPED_VIEW": "1"]) { $1 }
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output
        try child.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        XCTAssertEqual(child.terminationReason, .uncaughtSignal, text)
        XCTAssertTrue(text.contains("used after the callback that received it returned"), text)
        XCTAssertFalse(text.contains("escaped view content"), text)
    }

    func testItemsAreSharedByTasks() async throws {
        let items = try Items()
        // Appends from many tasks at once: the library serialises them.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask {
                    for i in 0..<25 { try items.append(Item(content: "t\(t) i\(i)", tokens: 1)) }
                }
            }
            try await group.waitForAll()
        }
        XCTAssertEqual(try items.count, 200)
        let result = try await pipeline(Scorer.recency()).runAsync(items, budget: Budget(maxTokens: 500, targetTokens: 500))
        XCTAssertEqual(result.indices.count, 200)
    }
}
