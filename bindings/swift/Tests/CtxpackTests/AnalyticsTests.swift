// Dry runs, the report helpers, budget simulation, sensitivity comparisons and the
// overflow observer. Expected values are worked out by hand in the comments.
import XCTest

@testable import Ctxpack

final class AnalyticsTests: XCTestCase {
    /// a (Message, dated) 10, b (Document, dated) 20, c (document, undated) 30,
    /// d (ToolOutput, dated) 40 tokens.
    func fourKinds() throws -> Items {
        try Items([
            Item(content: "a", tokens: 10, kind: "Message", timestampNs: jan2024),
            Item(content: "b", tokens: 20, kind: "Document", timestampNs: jan2024 + nsPerDay),
            Item(content: "c", tokens: 30, kind: "document"),
            Item(content: "d", tokens: 40, kind: "ToolOutput", timestampNs: jan2024 + 3 * nsPerDay),
        ])
    }

    /// Every item scores 1, so greedy takes them by density: list order here.
    func equalScores(_ slicer: Slicer? = nil) throws -> Pipeline {
        try Pipeline(scorer: Scorer.custom { _, _ in 1 }, slicer: slicer ?? Slicer.greedy(),
                     placer: Placer.chronological())
    }

    func testDryRunAndTheReportHelpers() throws {
        let items = try fourKinds()
        // Within a target of 60 greedy takes a, b and c (60 tokens); d no longer fits.
        let dry = try equalScores().dryRun(items, budget: Budget(maxTokens: 120, targetTokens: 60))
        XCTAssertEqual(dry.indices.sorted(), [0, 1, 2])
        let a = try XCTUnwrap(dry.report).analytics
        XCTAssertEqual(a.budgetUtilization, 0.5)  // 60 of max 120
        XCTAssertEqual(a.kindDiversity, 2)  // Message, Document (= document)
        XCTAssertEqual(a.timestampCoverage, 2.0 / 3.0, accuracy: 1e-12)  // c is undated
        XCTAssertEqual(a.quotaUtilization, [])  // greedy has no quotas
        // An untraced run has no report; a stage-traced one has the same helpers.
        XCTAssertNil(try equalScores().run(items, budget: Budget(maxTokens: 120, targetTokens: 60)).report)
        let staged = try equalScores().run(items, budget: Budget(maxTokens: 120, targetTokens: 60), trace: .stage)
        XCTAssertEqual(staged.report?.analytics, a)
        // Nothing included: every helper is 0.
        let none = try equalScores().dryRun(try Items([Item(content: "big", tokens: 500)]),
                                            budget: Budget(maxTokens: 100, targetTokens: 100))
        XCTAssertEqual(none.report?.analytics,
                       Analytics(budgetUtilization: 0, kindDiversity: 0, timestampCoverage: 0, quotaUtilization: []))
    }

    func testQuotaUtilization() throws {
        let items = try fourKinds()
        let budget = try Budget(maxTokens: 1000, targetTokens: 60)
        // At most one Document (b and c both are): greedy keeps b, the denser.
        let counted = try equalScores(
            Slicer.countQuota([CountQuotaEntry(kind: "Document", requireCount: 1, capCount: 1)], inner: Slicer.greedy())
        ).dryRun(items, budget: budget)
        XCTAssertEqual(counted.report?.analytics.quotaUtilization,
                       [KindQuotaUtilization(kind: "Document", mode: .count, require: 1, cap: 1, actual: 1, utilization: 1)])
        // Percentage quotas, sorted by kind; each entry agrees with the selection: the
        // included tokens of its kind over the target (60), in percent.
        let shared = try equalScores(
            Slicer.quota([QuotaEntry(kind: "Message", require: 0, cap: 40), QuotaEntry(kind: "Document", require: 10, cap: 50)],
                         inner: Slicer.greedy())
        ).dryRun(items, budget: budget)
        let q = try XCTUnwrap(shared.report).analytics.quotaUtilization
        XCTAssertEqual(q.map(\.kind), ["Document", "Message"])
        let tokens: [Double] = [10, 20, 30, 40]
        let documents = shared.indices.filter { $0 == 1 || $0 == 2 }.map { tokens[$0] }.reduce(0, +)
        let messages = shared.indices.filter { $0 == 0 }.map { tokens[$0] }.reduce(0, +)
        XCTAssertEqual(q[0].mode, .percentage)
        XCTAssertEqual(q[0].require, 10)
        XCTAssertEqual(q[0].cap, 50)
        XCTAssertEqual(q[0].actual, documents / 60 * 100, accuracy: 1e-9)
        XCTAssertEqual(q[0].utilization, min(1, q[0].actual / 50), accuracy: 1e-9)
        XCTAssertEqual(q[1].actual, messages / 60 * 100, accuracy: 1e-9)
        XCTAssertTrue(documents > 0 && documents <= 30, "within the cap's 30 tokens: \(documents)")
    }

    func testMarginalItemsAndMinimumBudget() throws {
        let items = try fourKinds()
        let p = try equalScores()
        let budget = try Budget(maxTokens: 1000, targetTokens: 60)
        // a, b, c fit 60; within 30 only a and b do, within 15 only a.
        XCTAssertEqual(try p.marginalItems(items, budget: budget, slack: 30), [2])
        XCTAssertEqual(try p.marginalItems(items, budget: budget, slack: 45), [1, 2])
        XCTAssertEqual(try p.marginalItems(items, budget: budget, slack: 0), [])
        XCTAssertEqual(try p.marginalItems(items, budget: budget, slack: -100), [])
        let quota = try equalScores(Slicer.quota([QuotaEntry(kind: "Document", require: 0, cap: 50)], inner: Slicer.greedy()))
        assertThrows(.pipelineConfig) { _ = try quota.marginalItems(items, budget: budget, slack: 10) }
        assertThrows(.invalidBudget) { _ = try p.marginalItems(items, budget: budget, slack: 100) }

        // Greedy takes a, b and c whenever they fit, so d (40) needs 10 + 20 + 30 + 40.
        XCTAssertEqual(try p.minBudget(for: 3, in: items, ceiling: 1000), 100)
        XCTAssertNil(try p.minBudget(for: 3, in: items, ceiling: 99))
        XCTAssertEqual(try p.minBudget(for: 0, in: items, ceiling: 10), 10)
        XCTAssertEqual(try p.run(items, budget: Budget(maxTokens: 99, targetTokens: 99)).indices.sorted(), [0, 1, 2])
        XCTAssertEqual(try p.run(items, budget: Budget(maxTokens: 100, targetTokens: 100)).indices.sorted(), [0, 1, 2, 3])
        assertThrows(.invalidArgument) { _ = try p.minBudget(for: 4, in: items, ceiling: 1000) }
        assertThrows(.invalidArgument) { _ = try p.minBudget(for: -1, in: items, ceiling: 1000) }
        assertThrows(.invalidArgument) { _ = try p.minBudget(for: 3, in: items, ceiling: 39) }
        let counted = try equalScores(
            Slicer.countQuota([CountQuotaEntry(kind: "Document", requireCount: 1, capCount: 1)], inner: Slicer.greedy()))
        assertThrows(.pipelineConfig) { _ = try counted.minBudget(for: 3, in: items, ceiling: 1000) }
    }

    func testSensitivityListsTheItemsThatSwing() throws {
        let items = try fourKinds()
        let budget = try Budget(maxTokens: 1000, targetTokens: 60)
        // "prefer d" scores d 10 and the rest 1: d (density 0.25) goes first, then a; b and
        // c no longer fit. "equal" takes a, b and c.
        let preferD = try Pipeline(scorer: Scorer.custom { items, i in items[i].content == "d" ? 10 : 1 },
                                   slicer: Slicer.greedy(), placer: Placer.chronological())
        let s = try Sensitivity.compare(items, budget: budget, variants: [
            SensitivityVariant("equal", try equalScores()), SensitivityVariant("prefer d", preferD),
        ])
        XCTAssertEqual(s.labels, ["equal", "prefer d"])
        XCTAssertEqual(s.results.map { $0.indices.sorted() }, [[0, 1, 2], [0, 3]])
        XCTAssertNotNil(s.results[0].report)
        XCTAssertEqual(s.results[1].report?.analytics.kindDiversity, 2)
        XCTAssertEqual(s.swings, [
            Swing(index: 1, statuses: [.included, .excluded]),
            Swing(index: 2, statuses: [.included, .excluded]),
            Swing(index: 3, statuses: [.excluded, .included]),
        ])
        let same = try Sensitivity.compare(items, budget: budget, variants: [
            SensitivityVariant("one", preferD), SensitivityVariant("two", preferD),
        ])
        XCTAssertEqual(same.swings, [])
        assertThrows(.invalidArgument) {
            _ = try Sensitivity.compare(items, budget: budget, variants: [SensitivityVariant("alone", preferD)])
        }
        // The first failing run's error, as it is.
        assertThrows(.pinnedExceedsBudget) {
            _ = try Sensitivity.compare(try Items([Item(content: "pinned", tokens: 500, pinned: true)]),
                                        budget: try Budget(maxTokens: 100, targetTokens: 100),
                                        variants: [SensitivityVariant("a", preferD), SensitivityVariant("b", preferD)])
        }
    }

    func testOverflowObserver() throws {
        // A pinned item of 80 tokens over a target of 50: 30 over, with item 0 merged.
        let items = try Items([Item(content: "p", tokens: 80, pinned: true), dated("a", tokens: 10, days: 0)])
        let budget = try Budget(maxTokens: 100, targetTokens: 50)
        let proceed = try pipeline(Scorer.recency(), overflow: .proceed)
        var seen: [Overflow] = []
        let result = try proceed.run(items, budget: budget) { seen.append($0) }
        XCTAssertEqual(seen, [Overflow(tokensOverBudget: 30, items: [0])])
        XCTAssertEqual(result.overflow, seen.first)
        // Not called when the run stays within target.
        seen = []
        _ = try proceed.run(items, budget: Budget(maxTokens: 100, targetTokens: 100)) { seen.append($0) }
        XCTAssertEqual(seen, [])
        // An error thrown by the observer is the run's.
        XCTAssertThrowsError(try proceed.run(items, budget: budget) { _ in throw Refusal("too big") }) { error in
            XCTAssertEqual((error as? Refusal)?.description, "too big")
        }
    }

    func testOverflowObserverOfAnAsyncRun() async throws {
        let items = try Items([Item(content: "p", tokens: 80, pinned: true)])
        let seen = Locked<[Overflow]>([])
        _ = try await pipeline(Scorer.recency(), overflow: .proceed)
            .runAsync(items, budget: Budget(maxTokens: 100, targetTokens: 50)) { o in seen.withLock { $0.append(o) } }
        XCTAssertEqual(seen.current, [Overflow(tokensOverBudget: 30, items: [0])])
    }
}
