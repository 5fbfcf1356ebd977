// Every status code, each from a real call into the library.
import CCtxpack
import Foundation
import XCTest

@testable import Ctxpack

final class StatusTests: XCTestCase {
    func testVersionNumberMatchesTheHeader() {
        XCTAssertEqual(Library.versionNumber, Library.headerVersionNumber)
        let parts = Library.version.split(separator: ".").compactMap { UInt32($0) }
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(Library.versionNumber, parts[0] * 10000 + parts[1] * 100 + parts[2])
    }

    func testEveryStatusHasItsCName() throws {
        let names: [Status: String] = [
            .ok: "CTXPACK_OK", .emptyContent: "CTXPACK_EMPTY_CONTENT", .emptyKind: "CTXPACK_EMPTY_KIND",
            .emptySource: "CTXPACK_EMPTY_SOURCE", .invalidBudget: "CTXPACK_INVALID_BUDGET",
            .pinnedExceedsBudget: "CTXPACK_PINNED_EXCEEDS_BUDGET", .overflow: "CTXPACK_OVERFLOW",
            .scorerConfig: "CTXPACK_SCORER_CONFIG", .slicerConfig: "CTXPACK_SLICER_CONFIG",
            .pipelineConfig: "CTXPACK_PIPELINE_CONFIG", .tableTooLarge: "CTXPACK_TABLE_TOO_LARGE",
            .countRequirementUnmet: "CTXPACK_COUNT_REQUIREMENT_UNMET", .callback: "CTXPACK_CALLBACK",
            .tokenOverflow: "CTXPACK_TOKEN_OVERFLOW", .invalidPolicy: "CTXPACK_INVALID_POLICY",
            .invalidArgument: "CTXPACK_INVALID_ARGUMENT", .outOfMemory: "CTXPACK_OUT_OF_MEMORY",
            .unsupported: "CTXPACK_UNSUPPORTED", .cancelled: "CTXPACK_CANCELLED",
            .invalidState: "CTXPACK_INVALID_STATE", .invalidRequest: "CTXPACK_INVALID_REQUEST",
            .nullArgument: "CTXPACK_NULL_ARGUMENT",
            .invalidUtf8: "CTXPACK_INVALID_UTF8", .wrongHandleType: "CTXPACK_WRONG_HANDLE_TYPE",
            .outOfRange: "CTXPACK_OUT_OF_RANGE", .noReport: "CTXPACK_NO_REPORT", .panic: "CTXPACK_PANIC",
        ]
        XCTAssertEqual(Set(Status.all), Set(names.keys))
        XCTAssertEqual(Status.all.map(\.rawValue), Status.all.map(\.rawValue).sorted())
        for status in Status.all { XCTAssertEqual(status.name, names[status]) }
        // Every number the library names is in the table.
        for code in Int32(0)..<256 where String(cString: ctxpack_status_name(code)) != "CTXPACK_UNKNOWN_STATUS" {
            XCTAssertTrue(Status.all.contains(Status(rawValue: code)), "status \(code) missing")
        }
        XCTAssertEqual(Status(rawValue: 99).name, "CTXPACK_UNKNOWN_STATUS")
    }

    func testEveryStatusFromARealCall() throws {
        let four = try Items((0..<4).map { Item(content: "m\($0)", tokens: 10, timestampNs: utc(2024, 1, 1, $0)) })
        let roomy = try Budget(maxTokens: 1000, targetTokens: 1000)
        let recency = try pipeline(Scorer.recency())

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
        assertThrows(.callback, containing: "NaN") {
            _ = try pipeline(Scorer.custom { _, _ in .nan }).run(four, budget: roomy)
        }
        assertThrows(.tokenOverflow) {
            _ = try pipeline(Scorer.recency(), overflow: .proceed)
                .run(Items([Item(content: "a", tokens: .max, pinned: true), Item(content: "b", tokens: 1, pinned: true)]),
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
        assertThrows(.outOfMemory, containing: "knapsack DP row") {
            // No table limit and a budget of 10^12 tokens: a 4 TB DP row is an error, not an abort.
            let p = try Pipeline(scorer: Scorer.reflexive(),
                                 slicer: Slicer.knapsack(bucketSize: 1, tableLimitBytes: .max),
                                 placer: Placer.chronological())
            _ = try p.run(Items([Item(content: "a", tokens: 600_000_000_000, futureRelevanceHint: 0.9),
                                 Item(content: "b", tokens: 600_000_000_000, futureRelevanceHint: 0.8)]),
                          budget: Budget(maxTokens: 1_000_000_000_000, targetTokens: 1_000_000_000_000))
        }
        assertThrows(.cancelled, containing: "before it started") {
            let token = try CancelToken()
            token.cancel()
            _ = try recency.run(four, budget: roomy, cancel: token)
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
            try call { ctxpack_result_report_included(traced, 99, &entry, $0) }
        }
        assertThrows(.noReport) {
            var summary = ctxpack_report_summary.sized()
            try call { ctxpack_result_report_summary(untraced, &summary, $0) }
        }
        XCTAssertNoThrow(try check(0))
    }

    // MARK: through the test hook

    /// `ctxpack_test_scorer_new_faulty(code, out, error)`: exported only by a library built
    /// with the `ffi-test-hooks` feature (run.sh builds it so and sets CTXPACK_TEST_HOOKS=1),
    /// and not in the header, so it is looked up at run time. Its scorer panics inside the
    /// library when run (code 0) or fails with the core error `code` (1...20).
    typealias FaultyScorerNew = @convention(c) (
        Int32, UnsafeMutablePointer<OpaquePointer?>?, UnsafeMutablePointer<OpaquePointer?>?
    ) -> Int32

    func faultyScorer(_ code: Int32) throws -> Scorer {
        guard try environment("CTXPACK_TEST_HOOKS") == "1" else { throw XCTSkip("CTXPACK_TEST_HOOKS is not 1") }
        let program = try XCTUnwrap(dlopen(nil, RTLD_NOW))
        defer { dlclose(program) }
        let symbol = try XCTUnwrap(dlsym(program, "ctxpack_test_scorer_new_faulty"),
                                   "libctxpack was not built with the ffi-test-hooks feature")
        let construct = unsafeBitCast(symbol, to: FaultyScorerNew.self)
        return try Scorer(create { construct(code, $0, $1) })
    }

    func runFaulty(_ code: Int32) throws {
        _ = try pipeline(faultyScorer(code)).run(Items([dated("a", tokens: 1, days: 0)]),
                                                 budget: Budget(maxTokens: 10, targetTokens: 10))
    }

    func testPanicInsideTheLibraryIsAStatus() throws {
        _ = try faultyScorer(0)  // skips (a failure for run.sh) when the hook is missing
        assertThrows(.panic) { try runFaulty(0) }
        // The panic did not leave the library unusable.
        XCTAssertEqual(try pipeline(Scorer.recency()).run(Items([dated("a", tokens: 1, days: 0)]),
                                                          budget: Budget(maxTokens: 10, targetTokens: 10)).indices, [0])
    }

    func testEveryCoreErrorThroughARun() throws {
        // Every core kind, also those only some calls produce: 18 (cancelled runs), 19 (prefix
        // states), 20 (chat requests).
        for code in Int32(1)...20 {
            XCTAssertThrowsError(try runFaulty(code)) { error in
                let e = error as? CtxpackError
                XCTAssertEqual(e?.status, Status(rawValue: code))
                XCTAssertFalse(e?.message.isEmpty ?? true, "status \(code) without a message")
            }
        }
    }
}
