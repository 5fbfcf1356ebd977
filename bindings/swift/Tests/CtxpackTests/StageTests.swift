// The stages run alone (a slicer's or a placer's own call), and the batch scorer.
import XCTest

@testable import Ctxpack

final class StageTests: XCTestCase {
    /// Scores 0.9, 0.7, 0.5, 0.3 (the reflexive hint); 40 tokens each; kinds alternate.
    func fourForty() throws -> (Items, [Double]) {
        let items = try Items(["t1", "m1", "t2", "m2"].enumerated().map { i, name in
            Item(content: name, tokens: 40, kind: i % 2 == 0 ? "tool" : "Message",
                 futureRelevanceHint: 0.9 - 0.2 * Double(i))
        })
        return (items, try Scorer.reflexive().score(items))
    }

    func testSlicersRunAlone() throws {
        let (items, scores) = try fourForty()
        let budget = try Budget(maxTokens: 100, targetTokens: 100)
        // Two of the four 40-token items fit in 100: the best two.
        XCTAssertEqual(try Slicer.greedy().slice(items, scores: scores, budget: budget).selected.sorted(), [0, 1])
        XCTAssertEqual(try Slicer.knapsack(bucketSize: 10).slice(items, scores: scores, budget: budget).selected.sorted(),
                       [0, 1])
        // Message requires 50 and gets 25 more of the unassigned 50 by token mass: room for
        // m1 only; tool's 25 hold no item.
        let quota = try Slicer.quota([QuotaEntry(kind: "Message", require: 50, cap: 100)], inner: Slicer.greedy())
        XCTAssertEqual(try quota.slice(items, scores: scores, budget: budget).selected, [1])
        // t1 is committed for the requirement, greedy takes the other three within 200, and
        // the cap of one tool removes t2 again. No Memory item exists: a shortfall.
        let counted = try Slicer.countQuota(
            [CountQuotaEntry(kind: "tool", requireCount: 1, capCount: 1),
             CountQuotaEntry(kind: "Memory", requireCount: 1, capCount: 1)],
            inner: Slicer.greedy()
        ).slice(items, scores: scores, budget: Budget(maxTokens: 200, targetTokens: 200))
        XCTAssertEqual(counted.selected.sorted(), [0, 1, 3])
        XCTAssertEqual(counted.capExcluded, [2])
        XCTAssertEqual(counted.shortfalls.map(\.kind), ["Memory"])
        XCTAssertEqual(counted.shortfalls.first?.requiredCount, 1)
        XCTAssertEqual(counted.shortfalls.first?.satisfiedCount, 0)
        // A group is taken whole: m1 and t2 are one candidate of 80 tokens worth 0.7 + 0.5.
        // By density t1 (0.9 / 40) goes first; the group (1.2 / 80) no longer fits; m2 does.
        let grouped = try Items(["t1", "m1", "t2", "m2"].enumerated().map { i, name in
            Item(content: name, tokens: 40, group: i == 1 || i == 2 ? "g" : "")
        })
        XCTAssertEqual(try Slicer.greedy().slice(grouped, scores: scores, budget: budget).selected.sorted(), [0, 3])
        // Within 120 the group fits after t1, and m2 no longer does.
        XCTAssertEqual(try Slicer.greedy().slice(grouped, scores: scores, budget: Budget(maxTokens: 120, targetTokens: 120))
                        .selected.sorted(), [0, 1, 2])
        // One score per item, finite.
        assertThrows(.invalidArgument) { _ = try Slicer.greedy().slice(items, scores: [1, 2], budget: budget) }
    }

    func testPlacersRunAlone() throws {
        let (items, scores) = try fourForty()
        XCTAssertEqual(try Placer.chronological().place(items, scores: scores), [0, 1, 2, 3])  // undated: input order
        let u = try Placer.uShaped().place(items, scores: scores)
        XCTAssertEqual(u.sorted(), [0, 1, 2, 3])
        XCTAssertEqual(u.first, 0)  // the two best at the edges
        XCTAssertEqual(u.last, 1)
        let reverse = try Placer.custom { items, _ in Array(items.indices.reversed()) }
        XCTAssertEqual(try reverse.place(items, scores: scores), [3, 2, 1, 0])
        assertThrows(.invalidArgument) { _ = try Placer.chronological().place(items, scores: [1]) }
    }

    func testBatchScorerIsCalledOncePerRun() throws {
        let calls = Locked(0)
        let bigOnes = try Scorer.customBatch { items in
            calls.withLock { $0 += 1 }
            return items.map { $0.tokens >= 30 ? 1.0 : 0.0 }
        }
        let items = try Items((1...4).map { dated("d\($0)", tokens: Int64($0) * 10, days: $0) })
        // The two items of 30 and 40 tokens score 1 and fill 70 exactly.
        XCTAssertEqual(try pipeline(bigOnes).run(items, budget: Budget(maxTokens: 1000, targetTokens: 70)).indices, [2, 3])
        XCTAssertEqual(calls.current, 1)
        XCTAssertEqual(try bigOnes.score(items), [0, 0, 1, 1])
        XCTAssertEqual(calls.current, 2)

        let cases: [(ScoreAllClosure, String)] = [
            ({ _ in [1] }, "returned 1 scores for 4 items"),
            ({ items in items.map { _ in Double.nan } }, "must be finite"),
            ({ _ in throw Refusal("no batch today") }, "no batch today"),
        ]
        for (score, message) in cases {
            let scorer = try Scorer.customBatch(score)
            assertThrows(.callback, containing: message) {
                _ = try pipeline(scorer).run(items, budget: Budget(maxTokens: 1000, targetTokens: 1000))
            }
        }
    }
    /// The one-shot run (no `Items` list) answers as a run over a list of the same items,
    /// untraced and traced, and words an item's error as a batch push does.
    func testRunOnceAnswersAsAListRun() throws {
        let kinds = ["Message", "Document", "ToolOutput", "Memory"]
        var items: [Item] = (0..<40).map { i in
            var it = dated("once \(i)", tokens: Int64(5 + i * 7 % 31), days: i)
            it.kind = kinds[i % kinds.count]
            it.priority = Int64(i % 9)
            it.tags = ["t\(i % 3)"]
            return it
        }
        items[3].pinned = true
        items[10].group = "call-1"
        items[11].group = "call-1"
        let list = try Items(items)
        let chat = try Pipeline(preset: "chat")
        let budget = try Budget(maxTokens: 300, targetTokens: 200)
        for trace in [TraceDetail.none, .item] {
            let fromList = try chat.run(list, budget: budget, trace: trace)
            let once = try chat.runOnce(items, budget: budget, trace: trace)
            XCTAssertEqual(fingerprint(fromList), fingerprint(once))
            XCTAssertEqual(fromList.report?.excluded, once.report?.excluded)
            XCTAssertTrue(fromList.indices.count > 1 && fromList.indices.count < items.count, "the comparison is telling")
        }
        XCTAssertEqual(try chat.runOnce([], budget: budget).indices, [])
        XCTAssertThrowsError(
            try chat.runOnce([Item(content: "ok", tokens: 1), Item(content: "", tokens: 1)], budget: budget)
        ) { error in
            XCTAssertEqual((error as? CtxpackError)?.status, .emptyContent)
            XCTAssertTrue((error as? CtxpackError)?.message.hasPrefix("item 1:") ?? false)
        }
    }
}
