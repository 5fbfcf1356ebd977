// Item groups and library-counted items (docs/groups.md, docs/tokenizer.md). The group
// pipeline vectors of tests/vectors/groups also run, in VectorTests.
import Foundation
import XCTest

@testable import Ctxpack

private let callText = "call get_weather(Oslo)"
private let resultText = "result: 4 C, rain"

/// A tool call and its result (group "c1" when grouped) and two messages, scored by their
/// hints: alone, the call is the densest item and its result the least dense.
private func toolChat(grouped: Bool) -> [Item] {
    let g = grouped ? "c1" : ""
    return [
        Item(content: callText, tokens: 10, futureRelevanceHint: 0.9, group: g),
        Item(content: resultText, tokens: 50, futureRelevanceHint: 0.1, group: g),
        Item(content: "message A", tokens: 20, futureRelevanceHint: 0.5),
        Item(content: "message B", tokens: 20, futureRelevanceHint: 0.4),
    ]
}

final class GroupTests: XCTestCase {
    func testGroupsAreAllOrNothingWithTheirReport() throws {
        let p = try pipeline(Scorer.reflexive())
        let budget = try Budget(maxTokens: 100, targetTokens: 60)
        let plain = try p.run(Items(toolChat(grouped: false)), budget: budget).indices
        XCTAssertTrue(plain.contains(0) && !plain.contains(1), "without the group the call is kept alone")
        let result = try p.run(Items(toolChat(grouped: true)), budget: budget, trace: .item)
        XCTAssertFalse(result.indices.contains(0) || result.indices.contains(1))
        let report = try XCTUnwrap(result.report)
        XCTAssertEqual(report.excluded.count, 2)
        let lead = try XCTUnwrap(report.excluded.first { $0.reason != .groupExcluded })
        let other = try XCTUnwrap(report.excluded.first { $0.reason == .groupExcluded })
        XCTAssertEqual(lead.reason, .budgetExceeded)
        XCTAssertEqual(other.name, "GroupExcluded")
        XCTAssertEqual(other.group, "c1")
        XCTAssertEqual(other.memberIndex, lead.index)
        XCTAssertEqual(other.memberContent, lead.index == 0 ? callText : resultText)
        XCTAssertEqual(other.memberReason, "BudgetExceeded")

        XCTAssertEqual(report.groups.count, 1)
        let g = try XCTUnwrap(report.groups.first)
        XCTAssertEqual(g.key, "c1")
        XCTAssertEqual(g.members, [0, 1])
        XCTAssertEqual(g.tokens, 60)
        XCTAssertEqual(g.decision, .excluded)
        XCTAssertEqual(g.stage, .slice)
        XCTAssertEqual(g.memberIndex, lead.index)
        XCTAssertNotNil(g.value)
        XCTAssertNil(g.pinnedBy)
        XCTAssertFalse(g.partialSelection)
        XCTAssertTrue(report.json.contains(#""groups":[{"key":"c1","members":[0,1],"tokens":60"#))

        let all = try p.run(Items(toolChat(grouped: true)), budget: Budget(maxTokens: 100, targetTokens: 100)).indices
        let at = try XCTUnwrap(all.firstIndex(of: 0))
        XCTAssertEqual(all.count, 4)
        XCTAssertEqual(all[at + 1], 1, "members adjacent, in input order")
    }

    func testGroupValueAndPinnedFirst() throws {
        // Two members worth 0.5 each against one item worth 0.8, 20 tokens of room.
        let items = try Items([
            Item(content: "member one", tokens: 10, futureRelevanceHint: 0.5, group: "g"),
            Item(content: "member two", tokens: 10, futureRelevanceHint: 0.5, group: "g"),
            Item(content: "single", tokens: 20, futureRelevanceHint: 0.8),
        ])
        let budget = try Budget(maxTokens: 20, targetTokens: 20)
        func selected(_ value: GroupValue) throws -> [Int] {
            try Pipeline(
                scorer: Scorer.reflexive(), slicer: Slicer.knapsack(bucketSize: 1), placer: Placer.chronological(),
                groupValue: value
            ).run(items, budget: budget).indices.sorted()
        }
        XCTAssertEqual(try selected(.sum), [0, 1])
        XCTAssertEqual(try selected(.max), [2])

        // A pinned, undated system prompt: last by default, first with pinnedFirst.
        let chat = try Items([
            Item(content: "You are a helpful assistant.", tokens: 5, pinned: true),
            dated("hi", tokens: 2, days: 1), dated("hello!", tokens: 2, days: 2),
        ])
        let roomy = try Budget(maxTokens: 100, targetTokens: 100)
        XCTAssertEqual(try pipeline(Scorer.recency()).run(chat, budget: roomy).indices, [1, 2, 0])
        let first = try Pipeline(
            scorer: Scorer.recency(), slicer: Slicer.greedy(), placer: Placer.chronological(), pinnedFirst: true)
        XCTAssertEqual(try first.run(chat, budget: roomy).indices, [0, 1, 2])
    }

    /// The counts are the ones OpenAI documents for cl100k_base.
    func testItemsCountedByAnEncoding() throws {
        let items = try Items([
            Item(content: "hello world", tokens: 0, encoding: "cl100k_base"),
            Item(content: "tiktoken is great!", tokens: 0, encoding: "CL100K_BASE"),
        ])
        let result = try pipeline(Scorer.recency()).run(items, budget: Budget(maxTokens: 100, targetTokens: 0), trace: .stage)
        let report = try XCTUnwrap(result.report)
        XCTAssertEqual(report.summary.totalTokensConsidered, 8)
        for e in report.excluded {
            XCTAssertEqual(e.reason, .budgetExceeded)
            XCTAssertEqual(e.itemTokens, e.index == 0 ? 2 : 6)
        }
        assertThrows(.invalidArgument, containing: #"unknown encoding "p50k_base""#) {
            _ = try Items([Item(content: "x", tokens: 0, encoding: "p50k_base")])
        }
        assertThrows(.invalidArgument, containing: "desc.tokens is 3 but desc.encoding is set") {
            _ = try Items([Item(content: "x", tokens: 3, encoding: "o200k_base")])
        }
    }

    func testCustomSlicerReturningHalfAGroupDropsIt() throws {
        let half = try Slicer.custom { items, _, _, _ in
            items.indices.filter { items[$0].content == callText }
        }
        let p = try Pipeline(scorer: Scorer.reflexive(), slicer: half, placer: Placer.chronological())
        let result = try p.run(
            Items(toolChat(grouped: true)), budget: Budget(maxTokens: 100, targetTokens: 100), trace: .item)
        XCTAssertEqual(result.indices, [])
        let groups = try XCTUnwrap(result.report).groups
        XCTAssertEqual(groups.count, 1)
        XCTAssertEqual(groups.first?.partialSelection, true)
        XCTAssertEqual(groups.first?.decision, .excluded)
    }
}
