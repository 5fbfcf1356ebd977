// XCTest suite of the Swift wrapper, mirroring bindings/cpp/tests: the quickstart, shared
// pipeline vectors, every status code, closure scorers and placers (one that throws),
// ownership of the closures, and the report. NOT COMPILED HERE (no Swift toolchain on
// the project's machines): see ../../README.md.
import CCtxpack
import Foundation
import XCTest

@testable import Ctxpack

/// Nanoseconds since the Unix epoch of a UTC date (proleptic Gregorian).
func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0) -> Int64 {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    let days = era * 146097 + doe - 719468
    return Int64(days * 86400 + hour * 3600 + minute * 60) * 1_000_000_000
}

/// Counts live instances, to see a closure's captured state released exactly once.
final class Tracker {
    static var alive = 0
    init() { Tracker.alive += 1 }
    deinit { Tracker.alive -= 1 }
}

final class CtxpackTests: XCTestCase {
    // MARK: quickstart

    /// examples/quickstart.c through the wrapper; the expected lines are what the C
    /// program prints (bindings/cpp/run.sh checks the C++ version against it the same way).
    func testQuickstartPrintsWhatTheCExamplePrints() throws {
        let chat: [(String, String, Int64)] = [
            ("You are a concise travel assistant.", "SystemPrompt", 12),
            ("User: I want to visit Lisbon in May.", "Message", 14),
            ("Assistant: Great choice! May is mild and sunny, ideal for walking tours.", "Message", 40),
            ("Tool: flights to LIS from 89 EUR", "ToolOutput", 25),
            ("Memory: the user prefers trains to planes.", "Memory", 10),
            ("User: and how do I get there by train?", "Message", 12),
        ]
        let start = utc(2025, 5, 1, 10)
        let items = try Items(chat.enumerated().map { i, m in
            Item(content: m.0, tokens: m.2, kind: m.1, timestampNs: start + Int64(i) * 60_000_000_000, pinned: i == 0)
        })
        let pipeline = try Pipeline(
            scorer: Scorer.composite([(Scorer.recency(), 2.0), (Scorer.kind(), 1.0)]),
            slicer: Slicer.greedy(), placer: Placer.chronological())
        let result = try pipeline.run(items, budget: Budget(maxTokens: 100, targetTokens: 70, outputReserve: 20))

        var lines = ["ctxpack \(String(cString: ctxpack_version())) selected \(result.indices.count) of \(chat.count) items:"]
        for (i, index) in result.indices.enumerated() {
            lines.append("  [\(index)] " + String(format: "%.3f", result.scores[i]) + "  " + chat[index].0)
        }
        XCTAssertEqual(lines, [
            "ctxpack 0.1.0 selected 4 of 6 items:",
            "  [0] 1.000  You are a concise travel assistant.",
            "  [3] 0.533  Tool: flights to LIS from 89 EUR",
            "  [4] 0.767  Memory: the user prefers trains to planes.",
            "  [5] 0.733  User: and how do I get there by train?",
        ])
    }

    // MARK: shared pipeline vectors (inputs and expectations transcribed from the files)

    func contents(_ items: [Item], _ indices: [Int]) -> [String] { indices.map { items[$0].content } }

    /// shared/conformance/required/pipeline/greedy-ushaped.toml
    func testVectorGreedyUShaped() throws {
        let list = [
            Item(content: "oldest", tokens: 200, kind: "Message", timestampNs: utc(2024, 1, 1)),
            Item(content: "early", tokens: 150, kind: "Message", timestampNs: utc(2024, 4, 1)),
            Item(content: "late", tokens: 150, kind: "Message", timestampNs: utc(2024, 9, 1)),
            Item(content: "newest", tokens: 100, kind: "Message", timestampNs: utc(2024, 12, 1)),
        ]
        let pipeline = try Pipeline(scorer: Scorer.recency(), slicer: Slicer.greedy(), placer: Placer.uShaped())
        let result = try pipeline.run(Items(list), budget: Budget(maxTokens: 1000, targetTokens: 500))
        XCTAssertEqual(contents(list, result.indices), ["newest", "early", "late"])
    }

    /// shared/conformance/required/pipeline/pinned-items.toml
    func testVectorPinnedItems() throws {
        let list = [
            Item(content: "system", tokens: 100, kind: "SystemPrompt", pinned: true),
            Item(content: "old", tokens: 150, kind: "Message", timestampNs: utc(2024, 1, 1)),
            Item(content: "new", tokens: 150, kind: "Message", timestampNs: utc(2024, 12, 1)),
        ]
        let pipeline = try Pipeline(scorer: Scorer.recency(), slicer: Slicer.greedy(), placer: Placer.chronological())
        let result = try pipeline.run(Items(list), budget: Budget(maxTokens: 1000, targetTokens: 400))
        XCTAssertEqual(contents(list, result.indices), ["old", "new", "system"])
    }

    /// shared/conformance/required/pipeline/composite-greedy-chronological.toml
    func testVectorCompositeGreedyChronological() throws {
        let list = [
            Item(content: "sys-old", tokens: 100, kind: "SystemPrompt", timestampNs: utc(2024, 1, 1)),
            Item(content: "msg-mid", tokens: 150, kind: "Message", timestampNs: utc(2024, 6, 1)),
            Item(content: "msg-new", tokens: 150, kind: "Message", timestampNs: utc(2024, 12, 1)),
            Item(content: "doc-old", tokens: 200, kind: "Document", timestampNs: utc(2024, 2, 1)),
        ]
        let scorer = try Scorer.composite([(Scorer.recency(), 1.0), (Scorer.kind(), 1.0)])
        let pipeline = try Pipeline(scorer: scorer, slicer: Slicer.greedy(), placer: Placer.chronological())
        let result = try pipeline.run(Items(list), budget: Budget(maxTokens: 1000, targetTokens: 350))
        XCTAssertEqual(contents(list, result.indices), ["sys-old", "msg-new"])
    }

    /// shared/conformance/required/pipeline/diagnostics-budget-exceeded.toml
    func testVectorDiagnosticsBudgetExceeded() throws {
        let list = [
            Item(content: "fits", tokens: 150, kind: "Message", timestampNs: utc(2024, 6, 1)),
            Item(content: "too-big", tokens: 400, kind: "Message", timestampNs: utc(2024, 1, 1)),
        ]
        let pipeline = try Pipeline(
            scorer: Scorer.recency(), slicer: Slicer.greedy(), placer: Placer.chronological(), deduplication: false)
        let items = try Items(list)
        let budget = try Budget(maxTokens: 1000, targetTokens: 200)
        XCTAssertEqual(contents(list, try pipeline.run(items, budget: budget).indices), ["fits"])

        let report = try XCTUnwrap(pipeline.run(items, budget: budget, trace: .stage).report)
        XCTAssertEqual(report.summary.totalCandidates, 2)
        XCTAssertEqual(report.summary.totalTokensConsidered, 550)
        XCTAssertEqual(report.included.map { list[$0.index].content }, ["fits"])
        XCTAssertEqual(report.included[0].score, 1.0, accuracy: 1e-9)
        XCTAssertEqual(report.included[0].reason, .scored)
        XCTAssertEqual(report.excluded.count, 1)
        let excluded = report.excluded[0]
        XCTAssertEqual(list[excluded.index].content, "too-big")
        XCTAssertEqual(excluded.score, 0.0, accuracy: 1e-9)
        XCTAssertEqual(excluded.name, "BudgetExceeded")
        XCTAssertEqual(excluded.reason, .budgetExceeded)
        XCTAssertEqual(excluded.itemTokens, 400)
        XCTAssertEqual(excluded.availableTokens, 50)
        XCTAssertTrue(report.json.contains("\"BudgetExceeded\""))
    }

    // MARK: statuses

    func assertThrows(_ status: Status, _ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            guard let e = error as? CtxpackError else { return XCTFail("not a CtxpackError: \(error)", file: file, line: line) }
            XCTAssertEqual(e.status, status, "\(e)", file: file, line: line)
            XCTAssertTrue(e.description.hasPrefix(status.name + ": "), file: file, line: line)
        }
    }

    func testEveryStatusMapsToAnError() throws {
        let four = try Items((0..<4).map { Item(content: "m\($0)", tokens: 10, timestampNs: utc(2024, 1, 1, $0)) })
        let roomy = try Budget(maxTokens: 1000, targetTokens: 1000)
        let recency = try Pipeline(scorer: Scorer.recency(), slicer: Slicer.greedy(), placer: Placer.chronological())

        let names: [Status: String] = [
            .ok: "CTXPACK_OK", .emptyContent: "CTXPACK_EMPTY_CONTENT", .emptyKind: "CTXPACK_EMPTY_KIND",
            .emptySource: "CTXPACK_EMPTY_SOURCE", .invalidBudget: "CTXPACK_INVALID_BUDGET",
            .pinnedExceedsBudget: "CTXPACK_PINNED_EXCEEDS_BUDGET", .overflow: "CTXPACK_OVERFLOW",
            .scorerConfig: "CTXPACK_SCORER_CONFIG", .slicerConfig: "CTXPACK_SLICER_CONFIG",
            .pipelineConfig: "CTXPACK_PIPELINE_CONFIG", .tableTooLarge: "CTXPACK_TABLE_TOO_LARGE",
            .countRequirementUnmet: "CTXPACK_COUNT_REQUIREMENT_UNMET", .callback: "CTXPACK_CALLBACK",
            .tokenOverflow: "CTXPACK_TOKEN_OVERFLOW", .invalidPolicy: "CTXPACK_INVALID_POLICY",
            .invalidArgument: "CTXPACK_INVALID_ARGUMENT", .unsupported: "CTXPACK_UNSUPPORTED",
            .nullArgument: "CTXPACK_NULL_ARGUMENT",
            .invalidUtf8: "CTXPACK_INVALID_UTF8", .wrongHandleType: "CTXPACK_WRONG_HANDLE_TYPE",
            .outOfRange: "CTXPACK_OUT_OF_RANGE", .noReport: "CTXPACK_NO_REPORT", .panic: "CTXPACK_PANIC",
        ]
        XCTAssertEqual(Set(Status.all), Set(names.keys))
        for status in Status.all { XCTAssertEqual(status.name, names[status]) }
        // Every number the library names is in the table.
        for code in Int32(0)..<256 where String(cString: ctxpack_status_name(code)) != "CTXPACK_UNKNOWN_STATUS" {
            XCTAssertTrue(Status.all.contains(Status(rawValue: code)), "status \(code) missing")
        }

        // Real calls producing each status. PANIC needs the C test suite's hook (not in
        // the header); its mapping is covered by the table above.
        assertThrows(.emptyContent) { _ = try Items([Item(content: "", tokens: 1)]) }
        assertThrows(.emptyKind) { _ = try Items([Item(content: "x", tokens: 1, kind: "  ")]) }
        assertThrows(.emptySource) { _ = try Items([Item(content: "x", tokens: 1, source: " ")]) }
        assertThrows(.invalidBudget) { _ = try Budget(maxTokens: 10, targetTokens: 20) }
        assertThrows(.pinnedExceedsBudget) {
            _ = try recency.run(Items([Item(content: "p", tokens: 90, pinned: true)]),
                                budget: Budget(maxTokens: 100, targetTokens: 100, outputReserve: 20))
        }
        assertThrows(.overflow) {
            // Two required tools (350 tokens) and a pinned item go over the 300 target.
            let slicer = try Slicer.countQuota([CountQuotaEntry(kind: "tool", requireCount: 2, capCount: 2)],
                                               inner: Slicer.greedy())
            let p = try Pipeline(scorer: Scorer.reflexive(), slicer: slicer, placer: Placer.uShaped())
            _ = try p.run(Items([Item(content: "sys", tokens: 50, pinned: true),
                                 Item(content: "t1", tokens: 200, kind: "tool"),
                                 Item(content: "t2", tokens: 150, kind: "tool")]),
                          budget: Budget(maxTokens: 1000, targetTokens: 300))
        }
        assertThrows(.scorerConfig) { _ = try Scorer.metadataKey("k", equals: "v", boost: -1) }
        assertThrows(.slicerConfig) { _ = try Slicer.knapsack(bucketSize: 0) }
        assertThrows(.pipelineConfig) {
            _ = try create { ctxpack_pipeline_new(nil, nil, nil, nil, $0, $1) }
        }
        assertThrows(.tableTooLarge) {
            let p = try Pipeline(scorer: Scorer.recency(), slicer: Slicer.knapsack(bucketSize: 1, tableLimitBytes: 1),
                                 placer: Placer.chronological())
            _ = try p.run(four, budget: roomy)
        }
        assertThrows(.countRequirementUnmet) {
            let slicer = try Slicer.countQuota([CountQuotaEntry(kind: "tool", requireCount: 1, capCount: 1)],
                                               inner: Slicer.greedy(), scarcity: .throw)
            _ = try Pipeline(scorer: Scorer.recency(), slicer: slicer, placer: Placer.chronological())
                .run(four, budget: roomy)
        }
        assertThrows(.callback) {
            _ = try Pipeline(scorer: Scorer.custom { _, _ in .nan }, slicer: Slicer.greedy(),
                             placer: Placer.chronological()).run(four, budget: roomy)
        }
        assertThrows(.tokenOverflow) {
            let p = try Pipeline(scorer: Scorer.recency(), slicer: Slicer.greedy(), placer: Placer.chronological(),
                                 overflowStrategy: .proceed)
            _ = try p.run(Items([Item(content: "a", tokens: .max, pinned: true), Item(content: "b", tokens: 1, pinned: true)]),
                          budget: Budget(maxTokens: .max, targetTokens: .max))
        }
        assertThrows(.invalidPolicy) { _ = try Pipeline(policyJSON: #"{"scorers": []}"#) }
        assertThrows(.invalidArgument) { _ = try Pipeline(preset: "no such preset") }
        assertThrows(.invalidArgument) {
            var options = ctxpack_pipeline_options.sized()
            options.overflow_strategy = 7
            let scorer = try Scorer.recency(), slicer = try Slicer.greedy(), placer = try Placer.chronological()
            _ = try create { ctxpack_pipeline_new(scorer.handle, slicer.handle, placer.handle, &options, $0, $1) }
        }
        assertThrows(.nullArgument) {
            var n = 0
            try check(ctxpack_items_len(nil, &n))
        }
        assertThrows(.invalidUtf8) {
            // Swift strings are always valid UTF-8: only raw bytes can be invalid.
            let bytes: [UInt8] = [0xff]
            try bytes.withUnsafeBufferPointer { buffer in
                var desc = ctxpack_item_desc.sized()
                let byte = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
                desc.content = ctxpack_str(ptr: byte, len: 1)
                desc.tokens = 1
                try call { ctxpack_items_push(four.handle, &desc, $0) }
            }
        }
        assertThrows(.wrongHandleType) {
            var n = 0
            try check(ctxpack_items_len(roomy.handle, &n))  // a budget where an item list belongs
        }
        // Accessor statuses, on raw results.
        func rawRun(_ trace: TraceDetail) throws -> OpaquePointer {
            var options = ctxpack_run_options.sized()
            options.trace_detail = trace.rawValue
            return try create { ctxpack_pipeline_run(recency.handle, four.handle, roomy.handle, &options, $0, $1) }
        }
        let traced = try rawRun(.stage), untraced = try rawRun(.none)
        defer {
            ctxpack_result_free(traced)
            ctxpack_result_free(untraced)
        }
        assertThrows(.outOfRange) {
            var entry = ctxpack_included_entry.sized()
            try check(ctxpack_result_report_included(traced, 99, &entry))
        }
        assertThrows(.noReport) {
            var summary = ctxpack_report_summary.sized()
            try check(ctxpack_result_report_summary(untraced, &summary))
        }
        XCTAssertNoThrow(try check(0))
    }

    // MARK: closures

    func testCustomScorerClosureSeesTheItemsAndIsReleasedOnce() throws {
        var seen: [String] = []
        // Everything that references the closure lives in this function's scope.
        func runOnce() throws {
            let tracker = Tracker()
            let scorer = try Scorer.custom { items, index in
                _ = tracker
                let item = items[index]
                seen.append(item.content)
                if item.content == "rich" {
                    XCTAssertEqual(item.kind, "Document")
                    XCTAssertEqual(item.tags, ["a", "b"])
                    XCTAssertEqual(item.metadata("id"), "42")
                    XCTAssertEqual(item.priority, 3)
                } else {
                    XCTAssertEqual(item.kind, "Message")  // the default
                    XCTAssertNil(item.timestampNs)
                }
                return Double(item.tokens)
            }
            let pipeline = try Pipeline(scorer: scorer, slicer: Slicer.greedy(), placer: Placer.chronological())
            let items = try Items([
                Item(content: "rich", tokens: 7, kind: "Document", priority: 3, tags: ["a", "b"], metadata: ["id": "42"]),
                Item(content: "plain", tokens: 1),
            ])
            let result = try pipeline.run(items, budget: Budget(maxTokens: 100, targetTokens: 100))
            XCTAssertEqual(result.scores, [7.0, 1.0])
            XCTAssertEqual(Tracker.alive, 1)
        }
        try runOnce()
        // The scorer and the pipeline are gone: the library released the closure box.
        XCTAssertEqual(Tracker.alive, 0)
        XCTAssertEqual(seen, ["rich", "plain"])
    }

    struct Refusal: Error, CustomStringConvertible {
        var description: String { "cannot score m2" }
    }

    func testThrowingScorerFailsTheRunWithItsMessage() throws {
        let items = try Items((0..<4).map { Item(content: "m\($0)", tokens: 10) })
        let scorer = try Scorer.custom { items, index in
            if items[index].content == "m2" { throw Refusal() }
            return 0.5
        }
        let pipeline = try Pipeline(scorer: scorer, slicer: Slicer.greedy(), placer: Placer.chronological())
        XCTAssertThrowsError(try pipeline.run(items, budget: Budget(maxTokens: 100, targetTokens: 100))) { error in
            let e = error as? CtxpackError
            XCTAssertEqual(e?.status, .callback)
            XCTAssertTrue(e?.message.contains("cannot score m2") ?? false)
        }
    }

    func testCustomPlacerClosure() throws {
        let items = try Items((1...4).map { Item(content: "m\($0)", tokens: Int64($0) * 10) })
        let biggestFirst = try Placer.custom { items, _ in
            items.indices.sorted { items[$0].tokens > items[$1].tokens }
        }
        let pipeline = try Pipeline(scorer: Scorer.recency(), slicer: Slicer.greedy(), placer: biggestFirst)
        XCTAssertEqual(try pipeline.run(items, budget: Budget(maxTokens: 1000, targetTokens: 1000)).indices, [3, 2, 1, 0])

        let short = try Placer.custom { _, _ in [0] }
        let broken = try Pipeline(scorer: Scorer.recency(), slicer: Slicer.greedy(), placer: short)
        XCTAssertThrowsError(try broken.run(items, budget: Budget(maxTokens: 1000, targetTokens: 1000))) { error in
            XCTAssertEqual((error as? CtxpackError)?.status, .callback)
            XCTAssertTrue((error as? CtxpackError)?.message.contains("returned 1 positions for 4 items") ?? false)
        }
    }

    // MARK: presets and policies

    func testPresetsRoundTripThroughPolicyJSON() throws {
        XCTAssertEqual(Pipeline.presets.count, 7)
        XCTAssertEqual(Pipeline.presets.first, "Chat")
        let items = try Items((0..<4).map { Item(content: "m\($0)", tokens: 10, timestampNs: utc(2024, 1, 1, $0)) })
        let budget = try Budget(maxTokens: 1000, targetTokens: 25)
        for name in Pipeline.presets {
            let preset = try Pipeline(preset: name)
            let again = try Pipeline(policyJSON: preset.policyJSON(pretty: true))
            XCTAssertEqual(try preset.run(items, budget: budget).indices, try again.run(items, budget: budget).indices)
        }
        let custom = try Pipeline(scorer: Scorer.custom { _, _ in 1 }, slicer: Slicer.greedy(), placer: Placer.chronological())
        assertThrows(.invalidPolicy) { _ = try custom.policyJSON() }
    }

    // MARK: components and report

    func testComponentsAreSharedByReferenceCounting() throws {
        let items = try Items((0..<4).map { Item(content: "m\($0)", tokens: Int64($0 + 1) * 10, timestampNs: utc(2024, 1, 1, $0)) })
        var pipelines: [Pipeline] = []
        do {
            let recency = try Scorer.recency()
            pipelines.append(try Pipeline(scorer: recency, slicer: Slicer.greedy(), placer: Placer.chronological()))
            pipelines.append(try Pipeline(scorer: Scorer.composite([(recency, 1.0), (Scorer.scaled(recency), 1.0)]),
                                          slicer: Slicer.greedy(), placer: Placer.chronological()))
        }
        // Recency 0, 1/3, 2/3, 1; greedy within 50 by density: m3 (40), then m0 (10).
        for pipeline in pipelines {
            XCTAssertEqual(try pipeline.run(items, budget: Budget(maxTokens: 1000, targetTokens: 50)).indices, [0, 3])
        }
    }

    func testReportOfATracedRun() throws {
        let list = [
            Item(content: "a", tokens: 10, timestampNs: utc(2024, 1, 1)),
            Item(content: "b", tokens: 20, timestampNs: utc(2024, 1, 2)),
            Item(content: "pinned", tokens: 5, pinned: true),
            Item(content: "negative", tokens: -3),
        ]
        let pipeline = try Pipeline(scorer: Scorer.recency(), slicer: Slicer.greedy(), placer: Placer.chronological())
        let result = try pipeline.run(Items(list), budget: Budget(maxTokens: 1000, targetTokens: 30), trace: .item)
        XCTAssertEqual(result.indices, [1, 2])
        XCTAssertEqual(result.reasons, [.scored, .pinned])
        XCTAssertNil(result.overflow)
        let report = try XCTUnwrap(result.report)
        XCTAssertEqual(report.summary.totalCandidates, 4)
        XCTAssertEqual(report.summary.totalTokensConsidered, 32)
        XCTAssertEqual(report.excluded.map(\.reason), [.negativeTokens, .budgetExceeded])
        XCTAssertEqual(report.excluded[0].tokens, -3)
        XCTAssertTrue(report.events.contains { $0.itemIndex != nil })
        XCTAssertTrue(report.shortfalls.isEmpty)
        XCTAssertNil(try pipeline.run(Items(list), budget: Budget(maxTokens: 1000, targetTokens: 30)).report)
    }
}
