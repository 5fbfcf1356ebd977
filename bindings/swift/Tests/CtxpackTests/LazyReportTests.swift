// A traced result's report reads its parts from the library's result on first access
// (Pipeline.swift, `Report`): each part must equal a field-by-field read of the same result
// through the C ABI, whatever the order of access, from many tasks at once, and after the
// pipeline, items and budget of the run are gone.
import CCtxpack
import Foundation
import XCTest

@testable import Ctxpack

/// A traced result's report as the test reads it, straight through the C ABI, one field
/// at a time (the oracle of the lazy parts).
private struct RawReport {
    var summary: ctxpack_report_summary
    var included: [ctxpack_included_entry] = []
    var excluded: [ctxpack_excluded_entry] = []
    var events: [ctxpack_trace_event] = []
    var shortfalls: [ctxpack_shortfall] = []
    var groups: [ctxpack_group_entry] = []
    var pruned: [ctxpack_pruned_form] = []
    var json = ""
    var budgetUtilization = 0.0
    var kindDiversity = 0
    var timestampCoverage = 0.0
}

/// Fills a versioned struct with `fill`, checking the status.
private func filled<T: GrowingCStruct>(
    _ fill: (UnsafeMutablePointer<T>, UnsafeMutablePointer<OpaquePointer?>) -> Int32
) throws -> T {
    var value = T.sized()
    var error: OpaquePointer? = nil
    let status = fill(&value, &error)
    ctxpack_error_free(error)
    XCTAssertEqual(status, 0)
    return value
}

/// Entries `0..<count` of one report list, each filled with `fill` (index, out, error).
private func filledAll<T: GrowingCStruct>(
    _ count: Int,
    _ fill: (Int, UnsafeMutablePointer<T>, UnsafeMutablePointer<OpaquePointer?>) -> Int32
) throws -> [T] {
    try (0..<count).map { i in try filled { fill(i, $0, $1) } }
}

private func rawRead(_ report: Report) throws -> RawReport {
    try report.result.with { r in
        var raw = RawReport(summary: try filled { ctxpack_result_report_summary(r, $0, $1) })
        raw.included = try filledAll(raw.summary.included_count) {
            ctxpack_result_report_included(r, $0, $1, $2)
        }
        raw.excluded = try filledAll(raw.summary.excluded_count) {
            ctxpack_result_report_excluded(r, $0, $1, $2)
        }
        raw.events = try filledAll(raw.summary.event_count) {
            ctxpack_result_report_event(r, $0, $1, $2)
        }
        raw.shortfalls = try filledAll(raw.summary.shortfall_count) {
            ctxpack_result_report_shortfall(r, $0, $1, $2)
        }
        raw.groups = try filledAll(raw.summary.group_count) {
            ctxpack_result_report_group(r, $0, $1, $2)
        }
        raw.pruned = try filledAll(raw.summary.pruned_form_count) {
            ctxpack_result_report_pruned_form(r, $0, $1, $2)
        }
        var json = ctxpack_str(ptr: nil, len: 0)
        XCTAssertEqual(ctxpack_result_report_json(r, &json), 0)
        raw.json = string(json)
        XCTAssertEqual(ctxpack_result_budget_utilization(r, &raw.budgetUtilization), 0)
        XCTAssertEqual(ctxpack_result_kind_diversity(r, &raw.kindDiversity), 0)
        XCTAssertEqual(ctxpack_result_timestamp_coverage(r, &raw.timestampCoverage), 0)
        return raw
    }
}

/// The parts of a report, read in `order` (a permutation of 0..<8).
private func parts(of report: Report, order: [Int]) -> [String: Any] {
    var out: [String: Any] = [:]
    for part in order {
        switch part {
        case 0: out["included"] = report.included
        case 1: out["excluded"] = report.excluded
        case 2: out["events"] = report.events
        case 3: out["shortfalls"] = report.shortfalls
        case 4: out["groups"] = report.groups
        case 5: out["prunedForms"] = report.prunedForms
        case 6: out["analytics"] = report.analytics
        default: out["json"] = report.json
        }
    }
    return out
}

/// Checks every lazy part of `report`, read in `order`, against the C ABI read.
private func assertMatchesRawRead(
    _ report: Report, order: [Int], _ name: String, file: StaticString = #filePath, line: UInt = #line
) throws {
    let p = parts(of: report, order: order)
    let raw = try rawRead(report)
    let s = raw.summary
    XCTAssertEqual(report.summary.totalCandidates, s.total_candidates, name, file: file, line: line)
    XCTAssertEqual(report.summary.totalTokensConsidered, s.total_tokens_considered, name, file: file, line: line)
    XCTAssertEqual(report.summary.totalTokensSaturated, s.total_tokens_saturated, name, file: file, line: line)

    let included = p["included"] as! [IncludedEntry]
    XCTAssertEqual(included.count, raw.included.count, name, file: file, line: line)
    for (e, c) in zip(included, raw.included) {
        XCTAssertEqual(e.index, c.index, name, file: file, line: line)
        XCTAssertEqual(e.score, c.score, name, file: file, line: line)
        XCTAssertEqual(e.reason.rawValue, c.reason, name, file: file, line: line)
        XCTAssertEqual(e.form, c.form, name, file: file, line: line)
        XCTAssertEqual(e.fullTokens, c.full_tokens, name, file: file, line: line)
        XCTAssertEqual(e.chosenTokens, c.chosen_tokens, name, file: file, line: line)
        XCTAssertEqual(e.availableTokens, c.available_tokens, name, file: file, line: line)
        XCTAssertEqual(e.cause?.rawValue, c.cause, name, file: file, line: line)
    }
    let excluded = p["excluded"] as! [ExcludedEntry]
    XCTAssertEqual(excluded.count, raw.excluded.count, name, file: file, line: line)
    for (e, c) in zip(excluded, raw.excluded) {
        XCTAssertEqual(e.index, c.index, name, file: file, line: line)
        XCTAssertEqual(e.score, c.score, name, file: file, line: line)
        XCTAssertEqual(e.reason.rawValue, c.reason, name, file: file, line: line)
        XCTAssertEqual(e.name, string(c.name), name, file: file, line: line)
        XCTAssertEqual(e.itemTokens, c.item_tokens, name, file: file, line: line)
        XCTAssertEqual(e.availableTokens, c.available_tokens, name, file: file, line: line)
        XCTAssertEqual(e.deduplicatedAgainst, string(c.deduplicated_against), name, file: file, line: line)
        XCTAssertEqual(e.kind, string(c.kind), name, file: file, line: line)
        XCTAssertEqual(e.tokens, c.tokens, name, file: file, line: line)
        XCTAssertEqual(e.countCap, c.count_cap, name, file: file, line: line)
        XCTAssertEqual(e.count, c.count, name, file: file, line: line)
        XCTAssertEqual(e.group, string(c.group), name, file: file, line: line)
        XCTAssertEqual(e.memberIndex, c.member_index, name, file: file, line: line)
        XCTAssertEqual(e.memberContent, string(c.member_content), name, file: file, line: line)
        XCTAssertEqual(e.memberReason, string(c.member_reason), name, file: file, line: line)
    }
    let events = p["events"] as! [TraceEvent]
    XCTAssertEqual(events.count, raw.events.count, name, file: file, line: line)
    for (e, c) in zip(events, raw.events) {
        XCTAssertEqual(e.stage?.rawValue, c.stage, name, file: file, line: line)
        XCTAssertEqual(e.durationMs, c.duration_ms, name, file: file, line: line)
        XCTAssertEqual(e.itemCount, c.item_count, name, file: file, line: line)
        XCTAssertEqual(e.message, c.has_message ? string(c.message) : nil, name, file: file, line: line)
        XCTAssertEqual(e.itemIndex, c.has_item_index ? c.item_index : nil, name, file: file, line: line)
    }
    let shortfalls = p["shortfalls"] as! [Shortfall]
    XCTAssertEqual(shortfalls.map(\.kind), raw.shortfalls.map { string($0.kind) }, name, file: file, line: line)
    XCTAssertEqual(shortfalls.map(\.requiredCount), raw.shortfalls.map(\.required_count), name, file: file, line: line)
    XCTAssertEqual(
        shortfalls.map(\.satisfiedCount), raw.shortfalls.map(\.satisfied_count), name, file: file, line: line)
    let groups = p["groups"] as! [GroupEntry]
    XCTAssertEqual(groups.count, raw.groups.count, name, file: file, line: line)
    for (g, c) in zip(groups, raw.groups) {
        XCTAssertEqual(g.key, string(c.key), name, file: file, line: line)
        XCTAssertEqual(g.members, Array(UnsafeBufferPointer(start: c.members, count: c.member_count)), name,
                       file: file, line: line)
        XCTAssertEqual(g.tokens, c.tokens, name, file: file, line: line)
        XCTAssertEqual(g.value, c.has_value ? c.value : nil, name, file: file, line: line)
        XCTAssertEqual(g.decision?.rawValue, c.decision, name, file: file, line: line)
        XCTAssertEqual(g.pinnedBy, c.has_pinned_by ? c.pinned_by : nil, name, file: file, line: line)
        XCTAssertEqual(g.partialSelection, c.partial_selection, name, file: file, line: line)
    }
    let pruned = p["prunedForms"] as! [PrunedForm]
    XCTAssertEqual(pruned.map(\.index), raw.pruned.map(\.index), name, file: file, line: line)
    XCTAssertEqual(pruned.map(\.form), raw.pruned.map(\.form), name, file: file, line: line)
    XCTAssertEqual(pruned.map(\.dominatedBy), raw.pruned.map(\.dominated_by), name, file: file, line: line)
    let analytics = p["analytics"] as! Analytics
    XCTAssertEqual(analytics.budgetUtilization, raw.budgetUtilization, name, file: file, line: line)
    XCTAssertEqual(analytics.kindDiversity, raw.kindDiversity, name, file: file, line: line)
    XCTAssertEqual(analytics.timestampCoverage, raw.timestampCoverage, name, file: file, line: line)
    XCTAssertEqual(p["json"] as! String, raw.json, name, file: file, line: line)
}

/// The storage address of an array (equal for two copies of one cached array).
private func storage<T>(_ array: [T]) -> UnsafeRawPointer? {
    array.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
}

/// Inputs whose traced runs fill every part of a report: pinned, duplicate, negative and
/// zero-token items, a group left out, an item placed as its variant, a kind short of its
/// count requirement.
private func mixedItems() -> [Item] {
    [
        Item(content: "sys", tokens: 10, kind: "SystemPrompt", pinned: true),
        dated("old", tokens: 30, days: 0), dated("dup", tokens: 10, days: 1), dated("dup", tokens: 10, days: 2),
        Item(content: "neg", tokens: -1), Item(content: "zero", tokens: 0),
        Item(content: "call", tokens: 10, kind: "ToolOutput", futureRelevanceHint: 0.9, group: "c1"),
        Item(content: "result", tokens: 50, kind: "ToolOutput", futureRelevanceHint: 0.1, group: "c1"),
        Item(
            content: "<long log>", tokens: 100, kind: "Document", futureRelevanceHint: 0.9,
            variants: [
                Variant(content: "summary", tokens: 20, quality: 0.5),
                Variant(content: "worse summary", tokens: 30, quality: 0.4),
            ]),
        Item(content: "question", tokens: 10, kind: "Message", futureRelevanceHint: 0.5),
    ]
}

final class LazyReportTests: XCTestCase {
    func testLazyPartsEqualTheLibrarysReport() throws {
        let items = try Items(mixedItems())
        let budget = try Budget(maxTokens: 100, targetTokens: 60)
        let pipelines: [(String, Pipeline)] = [
            ("recency greedy", try pipeline(Scorer.recency())),
            ("reflexive greedy", try pipeline(Scorer.reflexive())),
            ("count quota", try Pipeline(
                scorer: Scorer.reflexive(),
                slicer: Slicer.countQuota([CountQuotaEntry(kind: "Memory", requireCount: 1, capCount: 2)],
                                          inner: Slicer.greedy()),
                placer: Placer.uShaped())),
            ("Chat preset", try Pipeline(preset: "Chat")),
        ]
        let forward = Array(0..<8), backward = Array((0..<8).reversed()), jsonFirst = [7, 6, 1, 0, 4, 2, 3, 5]
        var sawGroup = false, sawVariant = false, sawShortfall = false, sawPruned = false
        for (name, p) in pipelines {
            for (detail, order) in [(TraceDetail.item, forward), (.stage, backward), (.item, jsonFirst)] {
                let result = try p.run(items, budget: budget, trace: detail)
                let report = try XCTUnwrap(result.report, name)
                try assertMatchesRawRead(report, order: order, "\(name) \(detail)")
                XCTAssertEqual(report.included.map(\.index), result.indices, name)
                sawGroup = sawGroup || report.excluded.contains { $0.reason == .groupExcluded }
                sawVariant = sawVariant || report.included.contains { $0.form > 0 }
                sawShortfall = sawShortfall || !report.shortfalls.isEmpty
                sawPruned = sawPruned || !report.prunedForms.isEmpty
            }
        }
        XCTAssertTrue(sawGroup && sawVariant && sawShortfall && sawPruned, "the inputs fill every part")

        // Dry runs and the results of a sensitivity comparison (new handles that outlive the
        // comparison) read the same way.
        let dry = try pipelines[1].1.dryRun(items, budget: budget)
        try assertMatchesRawRead(try XCTUnwrap(dry.report), order: jsonFirst, "dry run")
        let s = try Sensitivity.compare(items, budget: budget, variants: [
            SensitivityVariant("recency", pipelines[0].1), SensitivityVariant("reflexive", pipelines[1].1),
        ])
        for (label, r) in zip(s.labels, s.results) {
            try assertMatchesRawRead(try XCTUnwrap(r.report), order: backward, "sensitivity \(label)")
        }
    }

    func testAPartIsReadOnceAndSharedByCopies() throws {
        let result = try pipeline(Scorer.reflexive()).run(
            Items(mixedItems()), budget: Budget(maxTokens: 100, targetTokens: 60), trace: .item)
        let copy = result
        let report = try XCTUnwrap(result.report)
        XCTAssertTrue(report === copy.report, "copies of a result share its report")
        // Both arrays stay alive while compared (a freed one's address could be reused).
        let excluded = (report.excluded, try XCTUnwrap(copy.report).excluded)
        XCTAssertFalse(excluded.0.isEmpty)
        XCTAssertEqual(storage(excluded.0), storage(excluded.1))
        let events = (report.events, report.events)
        XCTAssertEqual(storage(events.0), storage(events.1))
    }

    /// 64 tasks read the parts of one fresh result at once, each in its own order: every
    /// task sees the same arrays (one read each, shared), equal to the C ABI's.
    func testConcurrentFirstAccessFromManyTasks() async throws {
        let items = try Items(ReportCostTests.benchItems())
        let budget = try Budget(maxTokens: 100_000, targetTokens: 50_000)
        let pipeline = try Pipeline(preset: "Chat")
        for round in 0..<3 {
            let report = try XCTUnwrap(try pipeline.run(items, budget: budget, trace: .item).report)
            let seen = try await withThrowingTaskGroup(of: [String].self) { group in
                for task in 0..<64 {
                    group.addTask {
                        let rotation = (task + round) % 8
                        let order = Array((0..<8).map { ($0 + rotation) % 8 })
                        let p = parts(of: report, order: order)
                        return [
                            "\(storage(p["included"] as! [IncludedEntry])!)",
                            "\(storage(p["excluded"] as! [ExcludedEntry])!)",
                            "\(storage(p["events"] as! [TraceEvent])!)",
                            "\((p["json"] as! String).utf8.count) \((p["analytics"] as! Analytics).kindDiversity)",
                        ]
                    }
                }
                return try await group.reduce(into: [[String]]()) { $0.append($1) }
            }
            XCTAssertEqual(seen.count, 64)
            XCTAssertEqual(Set(seen).count, 1, "every task got the one copy of each part")
            try assertMatchesRawRead(report, order: Array(0..<8), "round \(round)")
        }
    }

    /// A prefix run's result and a chat trim's selection (a result taken from the chat
    /// result, which is freed before the trim returns) keep their reports the same way.
    func testPrefixRunsAndChatSelectionsReadLazily() throws {
        let p = try pipeline(Scorer.recency())
        let budget = try Budget(maxTokens: 100, targetTokens: 60)
        let messages = try Items((0..<6).map { dated("message \($0)", tokens: 20, days: $0) })
        let first = try p.runPrefix(messages, budget: budget, trace: .item)
        let second = try p.runPrefix(messages, budget: budget, previous: first.state, trace: .stage)
        for (name, turn) in [("turn 1", first), ("turn 2", second)] {
            let report = try XCTUnwrap(turn.result.report, name)
            try assertMatchesRawRead(report, order: [7, 0, 1, 2, 3, 4, 5, 6], name)
            XCTAssertEqual(report.included.map(\.index), turn.result.indices, name)
            XCTAssertFalse(report.excluded.isEmpty, name)
        }
        XCTAssertNil(try p.runPrefix(messages, budget: budget).result.report)

        let turns = (0..<12).map { (i: Int) -> String in
            let role = i % 2 == 0 ? "user" : "assistant"
            let text = "turn \(i) " + String(repeating: "words ", count: 20)
            return #"{"role": "\#(role)", "content": "\#(text)"}"#
        }
        let request = #"{"messages": [\#(turns.joined(separator: ", "))]}"#
        let chat = try Pipeline(preset: "Chat")
        let trimmed = try chat.trimOpenAI(
            request, budget: try Budget(maxTokens: 150, targetTokens: 150), options: ChatOptions(trace: .item))
        XCTAssertFalse(trimmed.dropped.isEmpty)
        let report = try XCTUnwrap(trimmed.selection.report)
        try assertMatchesRawRead(report, order: Array((0..<8).reversed()), "chat selection")
        XCTAssertEqual(report.excluded.count, trimmed.dropped.count)
    }

    /// Two traced runs with a quota slicer: the first read at once, the second not read;
    /// weak references to the run's pipeline, items and budget.
    private func runsWhoseObjectsGo() throws -> (read: RunResult, unread: RunResult, objects: [() -> AnyObject?]) {
        let p = try Pipeline(
            scorer: Scorer.reflexive(),
            slicer: Slicer.quota([QuotaEntry(kind: "ToolOutput", require: 0, cap: 50)], inner: Slicer.greedy()),
            placer: Placer.chronological())
        let items = try Items(mixedItems())
        let budget = try Budget(maxTokens: 100, targetTokens: 60)
        let read = try p.run(items, budget: budget, trace: .item)
        _ = parts(of: try XCTUnwrap(read.report), order: Array(0..<8))
        let unread = try p.run(items, budget: budget, trace: .item)
        return (read, unread, [{ [weak p] in p }, { [weak items] in items }, { [weak budget] in budget }])
    }

    func testTheResultOutlivesThePipelineItemsAndBudget() throws {
        let (read, unread, objects) = try runsWhoseObjectsGo()
        XCTAssertTrue(objects.allSatisfy { $0() == nil }, "the run's objects are gone")
        let want = try XCTUnwrap(read.report)
        let report = try XCTUnwrap(unread.report)
        XCTAssertEqual(report.included, want.included)
        XCTAssertEqual(report.excluded, want.excluded)
        XCTAssertEqual(report.groups, want.groups)
        XCTAssertEqual(report.shortfalls, want.shortfalls)
        XCTAssertEqual(report.prunedForms, want.prunedForms)
        XCTAssertEqual(report.analytics, want.analytics)
        XCTAssertEqual(report.analytics.quotaUtilization.map(\.kind), ["ToolOutput"])
        XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        try assertMatchesRawRead(report, order: Array(0..<8), "after the run's objects")
    }
}
