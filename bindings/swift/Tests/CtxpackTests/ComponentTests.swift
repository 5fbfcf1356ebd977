// Every built-in scorer, slicer and placer, with expectations worked out by hand from the
// specification (shared/spec 03–05), and the way components share references.
import XCTest

@testable import Ctxpack

final class ComponentTests: XCTestCase {
    func assertScores(_ got: [Double], _ want: [Double], _ what: String, file: StaticString = #filePath,
                      line: UInt = #line)
    {
        XCTAssertEqual(got.count, want.count, what, file: file, line: line)
        for (g, w) in zip(got, want) {
            XCTAssertEqual(g, w, accuracy: 1e-9, "\(what): \(got), want \(want)", file: file, line: line)
        }
    }

    /// Each scorer alone over the same three items (Scorer.score).
    func testEveryBuiltInScorer() throws {
        let items = try Items([
            Item(content: "a", tokens: 1, kind: "SystemPrompt", priority: 1, tags: ["x"],
                 metadata: ["cupel:trust": "0.9", "team": "red"], timestampNs: jan2024, futureRelevanceHint: 2),
            Item(content: "b", tokens: 1, kind: "Document", priority: 5, tags: ["x", "y"],
                 timestampNs: jan2024 + 5 * nsPerDay, futureRelevanceHint: 0.25),
            Item(content: "c", tokens: 1, tags: ["z"], metadata: ["team": "blue"]),
        ])
        let now = jan2024 + 10 * nsPerDay
        let kindWeights = try Scorer.kind(weights: ["Document": 1, "Message": 0.5])
        let cases: [(String, Scorer, [Double])] = [
            // Rank among dated items; an undated item scores 0.
            ("recency", try Scorer.recency(), [0, 1, 0]),
            ("priority", try Scorer.priority(), [0, 1, 0]),
            // Default weights: SystemPrompt 1, Document 0.4, Message 0.2.
            ("kind", try Scorer.kind(), [1, 0.4, 0.2]),
            ("kind with weights", kindWeights, [0, 1, 0.5]),
            // Matched weight over the total weight (1.5).
            ("tag", try Scorer.tag(weights: ["x": 1, "z": 0.5]), [2.0 / 3, 2.0 / 3, 1.0 / 3]),
            // The hint clamped to [0, 1]; none scores 0.
            ("reflexive", try Scorer.reflexive(), [1, 0.25, 0]),
            // The share of the other items that share a tag with this one.
            ("frequency", try Scorer.frequency(), [0.5, 0.5, 0]),
            ("metadata trust", try Scorer.metadataTrust(defaultScore: 0.3), [0.9, 0.3, 0.3]),
            ("metadata key", try Scorer.metadataKey("team", equals: "blue", boost: 2), [1, 1, 2]),
            ("scaled", try Scorer.scaled(kindWeights), [0, 1, 0.5]),
            // (kind + recency) / 2.
            ("composite", try Scorer.composite([WeightedScorer(Scorer.kind(), weight: 1), WeightedScorer(Scorer.recency(), weight: 1)]), [0.5, 0.7, 0.1]),
            // Ages 10 and 5 days; undated items get the default 0.5 or the given score.
            ("decay window", try Scorer.decay(.window(maxAge: .seconds(7 * 86_400)), fixedNowNs: now), [0, 1, 0.5]),
            ("decay exponential",
             try Scorer.decay(.exponential(halfLife: .nanoseconds(5 * nsPerDay)), fixedNowNs: now, nullTimestampScore: 0.1),
             [0.25, 0.5, 0.1]),
            ("decay step",
             try Scorer.decay(
                 .step([DecayWindow(maxAge: .seconds(6 * 86_400), score: 0.9), DecayWindow(maxAge: .seconds(30 * 86_400), score: 0.4)]),
                 fixedNow: date(nanoseconds: now)), [0.4, 0.9, 0.5]),
            ("custom", try Scorer.custom { items, index in Double(items[index].content.unicodeScalars.first!.value) },
             [97, 98, 99]),
        ]
        for (name, scorer, want) in cases {
            assertScores(try scorer.score(items), want, name)
        }
    }

    /// Each slicer inside a pipeline whose custom scorer fixes the scores, so the slicer
    /// alone decides. Budget 100; scores m1 0.9, d1 0.8, m2 0.7, t1 0.05.
    func testEveryBuiltInSlicer() throws {
        let list = [
            Item(content: "m1", tokens: 40, kind: "Message"),
            Item(content: "d1", tokens: 50, kind: "Document"),
            Item(content: "m2", tokens: 30, kind: "Message"),
            Item(content: "t1", tokens: 20, kind: "ToolOutput"),
        ]
        let fixed = try Scorer.custom { items, index in
            ["m1": 0.9, "d1": 0.8, "m2": 0.7, "t1": 0.05][items[index].content]!
        }
        let items = try Items(list)
        let budget = try Budget(maxTokens: 100, targetTokens: 100)
        let cases: [(String, Slicer, Set<String>)] = [
            // By density: m2 .0233, m1 .0225 (70 tokens), d1 .016 does not fit, t1 does.
            ("greedy", try Slicer.greedy(), ["m2", "m1", "t1"]),
            // The best value within 100 tokens: m1 + d1 (1.7) over m1 + m2 + t1 (1.65).
            ("knapsack", try Slicer.knapsack(bucketSize: 10), ["m1", "d1"]),
            // Shares by token mass (140): Document 35, Message 50 capped at 40, ToolOutput 14;
            // greedy per kind keeps only m2.
            ("quota", try Slicer.quota([QuotaEntry(kind: "Message", require: 0, cap: 40)], inner: Slicer.greedy()),
             ["m2"]),
            // t1 committed first, then greedy over the rest.
            ("count quota",
             try Slicer.countQuota([CountQuotaEntry(kind: "ToolOutput", requireCount: 1, capCount: 1),
                                    CountQuotaEntry(kind: "Memory", requireCount: 1, capCount: 2)],
                                   inner: Slicer.greedy()),
             ["t1", "m2", "m1"]),
            // At most one Message: d1 + m1 (1.7) beats d1 + m2 + t1 (1.55).
            ("count-constrained knapsack",
             try Slicer.countConstrainedKnapsack([CountQuotaEntry(kind: "Message", requireCount: 0, capCount: 1)],
                                                 bucketSize: 10),
             ["d1", "m1"]),
        ]
        for (name, slicer, want) in cases {
            let p = try Pipeline(scorer: fixed, slicer: slicer, placer: Placer.chronological())
            let result = try p.run(items, budget: budget, trace: .item)
            XCTAssertEqual(Set(result.indices.map { list[$0].content }), want, name)
            XCTAssertEqual(result.indices.count, want.count, name)
            if name == "count quota" {
                let shortfalls = try XCTUnwrap(result.report).shortfalls
                XCTAssertEqual(shortfalls.map(\.kind), ["Memory"])
                XCTAssertEqual(shortfalls.map(\.requiredCount), [1])
                XCTAssertEqual(shortfalls.map(\.satisfiedCount), [0])
            }
        }
    }

    func testEveryBuiltInPlacer() throws {
        let list = [dated("c", tokens: 1, days: 3), dated("a", tokens: 1, days: 1), Item(content: "none", tokens: 1),
                    dated("b", tokens: 1, days: 2)]
        let fixed = try Scorer.custom { items, index in
            ["c": 0.1, "a": 0.9, "none": 0.5, "b": 0.7][items[index].content]!
        }
        let items = try Items(list)
        let budget = try Budget(maxTokens: 100, targetTokens: 100)
        // Dated items oldest first, then the undated one.
        let chronological = try Pipeline(scorer: fixed, slicer: Slicer.greedy(), placer: Placer.chronological())
        XCTAssertEqual(try chronological.run(items, budget: budget).indices, [1, 3, 0, 2])
        // The best at both ends: a (0.9) first, b (0.7) last, none (0.5) second, c inside.
        let uShaped = try Pipeline(scorer: fixed, slicer: Slicer.greedy(), placer: Placer.uShaped())
        XCTAssertEqual(try uShaped.run(items, budget: budget).indices, [1, 2, 0, 3])
    }

    func testComponentsAreSharedByReferenceCounting() throws {
        let items = try Items((0..<4).map {
            Item(content: "m\($0)", tokens: Int64($0 + 1) * 10, timestampNs: utc(2024, 1, 1, $0))
        })
        var pipelines: [Pipeline] = []
        do {
            let recency = try Scorer.recency()
            pipelines.append(try pipeline(recency))
            pipelines.append(try pipeline(Scorer.composite([WeightedScorer(recency, weight: 1.0), WeightedScorer(Scorer.scaled(recency), weight: 1.0)])))
        }
        // Recency 0, 1/3, 2/3, 1; greedy within 50 by density: m3 (40), then m0 (10).
        for p in pipelines {
            XCTAssertEqual(try p.run(items, budget: Budget(maxTokens: 1000, targetTokens: 50)).indices, [0, 3])
        }
    }

    func testItemListAppendIsAllOrNothing() throws {
        let items = try Items([dated("a", tokens: 1, days: 0)])
        assertThrows(.emptyContent, containing: "item 1:") {
            try items.append(contentsOf: [dated("b", tokens: 1, days: 1), Item(content: "", tokens: 1),
                                          dated("c", tokens: 1, days: 2)])
        }
        XCTAssertEqual(try items.count, 1)
        try items.append(dated("b", tokens: 1, days: 1))
        XCTAssertEqual(try items.count, 2)
        XCTAssertEqual(try pipeline(Scorer.recency()).run(items, budget: Budget(maxTokens: 10, targetTokens: 10)).indices,
                       [0, 1])
        try items.removeAll()
        XCTAssertEqual(try items.count, 0)
    }

    func testBudgetReservedSlotsAndSafetyMargin() throws {
        let budget = try Budget(maxTokens: 1000, targetTokens: 500, outputReserve: 100, reservedSlots: ["Memory": 50],
                                estimationSafetyMarginPercent: 10)
        // Effective target: min(500, 1000 - 100) - 50 reserved = 450, less 10 % = 405. b
        // (the more recent) takes 150; a (300) would fit 450 but not 405.
        let items = try Items([dated("a", tokens: 300, days: 0), dated("b", tokens: 150, days: 1)])
        XCTAssertEqual(try pipeline(Scorer.recency()).run(items, budget: budget).indices, [1])
        assertThrows(.invalidBudget) {
            _ = try Budget(maxTokens: 100, targetTokens: 50, reservedSlots: ["Memory": 1, "memory": 1])
        }
    }
}
