// The selection report of traced runs, and the overflow event of Proceed runs.
import Foundation
import XCTest

@testable import Ctxpack

final class ReportTests: XCTestCase {
    func testReportOfATracedRun() throws {
        let list = [
            Item(content: "sys", tokens: 10, kind: "SystemPrompt", pinned: true),
            dated("old", tokens: 30, days: 0), dated("dup", tokens: 10, days: 1), dated("dup", tokens: 10, days: 2),
            dated("new", tokens: 30, days: 3), Item(content: "neg", tokens: -1), Item(content: "zero", tokens: 0),
        ]
        let p = try pipeline(Scorer.recency())
        let items = try Items(list)
        let budget = try Budget(maxTokens: 100, targetTokens: 60)
        let result = try p.run(items, budget: budget, trace: .item)
        let report = try XCTUnwrap(result.report)
        XCTAssertEqual(report.summary.totalCandidates, list.count)
        XCTAssertEqual(report.summary.totalTokensConsidered, 89)
        // The included entries are the selection, in placed order.
        XCTAssertEqual(report.included.map(\.index), result.indices)
        XCTAssertEqual(report.included.map(\.score), result.scores)
        XCTAssertEqual(report.included.map(\.reason), result.reasons)
        XCTAssertTrue(result.reasons.contains(.pinned))
        XCTAssertTrue(result.reasons.contains(.zeroToken))

        let excluded = Dictionary(grouping: report.excluded) { list[$0.index].content }
        let neg = try XCTUnwrap(excluded["neg"]?.first)
        XCTAssertEqual(neg.reason, .negativeTokens)
        XCTAssertEqual(neg.name, "NegativeTokens")
        XCTAssertEqual(neg.tokens, -1)
        // The older duplicate goes; the newer one, at index 3, is kept and selected.
        let dup = try XCTUnwrap(excluded["dup"])
        XCTAssertEqual(dup.map(\.index), [2])
        XCTAssertEqual(dup.first?.reason, .deduplicated)
        XCTAssertEqual(dup.first?.deduplicatedAgainst, "dup")
        XCTAssertTrue(result.indices.contains(3))
        let old = try XCTUnwrap(excluded["old"]?.first)
        XCTAssertEqual(old.reason, .budgetExceeded)
        XCTAssertEqual(old.name, "BudgetExceeded")
        XCTAssertEqual(old.itemTokens, 30)

        XCTAssertEqual(Set(report.events.compactMap(\.stage)),
                       [.classify, .score, .deduplicate, .slice, .place])
        XCTAssertTrue(report.events.contains { $0.itemIndex != nil })
        XCTAssertTrue(report.shortfalls.isEmpty)
        let wire = try JSONSerialization.jsonObject(with: Data(report.json.utf8))
        XCTAssertTrue(wire is [String: Any])
        XCTAssertTrue(report.json.contains("\"NegativeTokens\""))

        // An untraced run has no report, and selects the same.
        let untraced = try p.run(items, budget: budget)
        XCTAssertNil(untraced.report)
        XCTAssertEqual(untraced.indices, result.indices)
        // Stage detail: no per-item events.
        let stage = try XCTUnwrap(p.run(items, budget: budget, trace: .stage).report)
        XCTAssertFalse(stage.events.contains { $0.itemIndex != nil })
    }

    func testOverflowOfAProceedRun() throws {
        let items = try Items([Item(content: "p", tokens: 80, pinned: true), dated("a", tokens: 10, days: 0)])
        let budget = try Budget(maxTokens: 100, targetTokens: 50)
        let proceed = try pipeline(Scorer.recency(), overflow: .proceed).run(items, budget: budget)
        let overflow = try XCTUnwrap(proceed.overflow)
        XCTAssertEqual(overflow.tokensOverBudget, 30)
        XCTAssertEqual(overflow.items, [0])
        XCTAssertNil(try pipeline(Scorer.recency(), overflow: .truncate).run(items, budget: budget).overflow)
        assertThrows(.overflow) { _ = try pipeline(Scorer.recency(), overflow: .throw).run(items, budget: budget) }
    }
}
