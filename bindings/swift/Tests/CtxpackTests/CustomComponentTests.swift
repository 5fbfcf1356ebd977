// Scorers, slicers and placers written as Swift closures: what they see, what they may
// return, errors they throw, and the release of what they capture.
import XCTest

@testable import Ctxpack

final class CustomComponentTests: XCTestCase {
    func budget100() throws -> Budget { try Budget(maxTokens: 100, targetTokens: 100) }

    func testCustomScorerSeesEveryFieldAndIsReleasedOnce() throws {
        let seen = Locked<[String]>([])
        // Everything that references the closure lives in this function's scope.
        func runOnce() throws {
            let tracker = Tracker()
            let scorer = try Scorer.custom { items, index in
                _ = tracker
                let item = items[index]
                seen.withLock { $0.append(item.content) }
                if item.content == "rich" {
                    XCTAssertEqual(item.tokens, 7)
                    XCTAssertEqual(item.kind, "Document")
                    XCTAssertEqual(item.source, "rag")
                    XCTAssertEqual(item.priority, -3)
                    XCTAssertEqual(item.tags, ["a", "b", "a"])
                    XCTAssertEqual(item.metadata("id"), "42")
                    XCTAssertEqual(item.metadata("é"), "ü")
                    XCTAssertNil(item.metadata("ID"))
                    XCTAssertEqual(item.timestampNs, utc(2024, 2, 29, 12, 30) + 123_456_789)
                    XCTAssertEqual(item.futureRelevanceHint, 1.5)
                    XCTAssertEqual(item.originalTokens, 70)
                    XCTAssertFalse(item.pinned)
                } else {
                    XCTAssertEqual(item.kind, "Message")  // the defaults
                    XCTAssertEqual(item.source, "Chat")
                    XCTAssertNil(item.priority)
                    XCTAssertEqual(item.tags, [])
                    XCTAssertNil(item.timestampNs)
                    XCTAssertNil(item.futureRelevanceHint)
                    XCTAssertNil(item.originalTokens)
                }
                return Double(item.tokens)
            }
            let items = try Items([
                Item(content: "rich", tokens: 7, kind: "Document", source: "rag", priority: -3, tags: ["a", "b", "a"],
                     metadata: ["id": "42", "é": "ü"], timestampNs: utc(2024, 2, 29, 12, 30) + 123_456_789,
                     futureRelevanceHint: 1.5, originalTokens: 70),
                Item(content: "plain", tokens: 1),
            ])
            let result = try pipeline(scorer).run(items, budget: budget100())
            XCTAssertEqual(result.scores, [7.0, 1.0])
            XCTAssertEqual(Tracker.alive.current, 1)
        }
        try runOnce()
        // The scorer and the pipeline are gone: the library released the closure box.
        XCTAssertEqual(Tracker.alive.current, 0)
        XCTAssertEqual(seen.current, ["rich", "plain"])
    }

    func testThrowingScorerFailsTheRunWithItsMessage() throws {
        let items = try Items((0..<4).map { Item(content: "m\($0)", tokens: 10) })
        let scorer = try Scorer.custom { items, index in
            if items[index].content == "m2" { throw Refusal("the embedding service is down") }
            return 0.5
        }
        let p = try pipeline(scorer)
        // Many failures on one thread reuse its message buffer.
        for _ in 0..<50 {
            assertThrows(.callback, containing: "the embedding service is down") {
                _ = try p.run(items, budget: budget100())
            }
        }
        // The scorer still works when it does not throw.
        let fine = try Items([Item(content: "m0", tokens: 10)])
        XCTAssertEqual(try p.run(fine, budget: budget100()).indices, [0])
    }

    func testCustomSlicerClosure() throws {
        let calls = Locked(0)
        // Every other candidate in score order; checks what the library hands over.
        let everyOther = try Slicer.custom { items, scores, target, max in
            calls.withLock { $0 += 1 }
            guard target == 100, max == 100 else { throw Refusal("unexpected budget \(target)/\(max)") }
            guard zip(scores, scores.dropFirst()).allSatisfy({ $0 >= $1 }) else { throw Refusal("not sorted") }
            guard items.count == scores.count else { throw Refusal("\(items.count) items, \(scores.count) scores") }
            return Array(stride(from: 0, to: items.count, by: 2))
        }
        let reverse = try Placer.custom { items, _ in Array(items.indices.reversed()) }
        let p = try Pipeline(scorer: Scorer.recency(), slicer: everyOther, placer: reverse)
        let items = try Items((0..<4).map { dated("d\($0)", tokens: 1, days: $0) })
        // Sorted by recency: d3 d2 d1 d0; every other: d3 d1; merged in score order: d3 d1;
        // reversed.
        XCTAssertEqual(try p.run(items, budget: budget100()).indices, [1, 3])
        XCTAssertEqual(calls.current, 1)

        // Positions out of range, repeated, or too many fail the run.
        for bad in [[7], [0, 0], [0, 1, 2, 3, 0]] {
            let slicer = try Slicer.custom { _, _, _, _ in bad }
            assertThrows(.callback) {
                _ = try Pipeline(scorer: Scorer.recency(), slicer: slicer, placer: Placer.chronological())
                    .run(items, budget: budget100())
            }
        }
        let throwing = try Slicer.custom { _, _, _, _ in throw Refusal("no slicing today") }
        assertThrows(.callback, containing: "no slicing today") {
            _ = try Pipeline(scorer: Scorer.recency(), slicer: throwing, placer: Placer.chronological())
                .run(items, budget: budget100())
        }
    }

    func testCustomSlicerReleasedWithTheLastReference() throws {
        do {
            let tracker = Tracker()
            let slicer = try Slicer.custom { _, _, _, _ in
                _ = tracker
                return []
            }
            _ = try Pipeline(scorer: Scorer.recency(), slicer: slicer, placer: Placer.chronological())
            XCTAssertEqual(Tracker.alive.current, 1)
        }
        XCTAssertEqual(Tracker.alive.current, 0)
    }

    func testCustomPlacerClosure() throws {
        let items = try Items((1...4).map { Item(content: "m\($0)", tokens: Int64($0) * 10) })
        let biggestFirst = try Placer.custom { items, _ in
            items.indices.sorted { items[$0].tokens > items[$1].tokens }
        }
        let p = try Pipeline(scorer: Scorer.recency(), slicer: Slicer.greedy(), placer: biggestFirst)
        XCTAssertEqual(try p.run(items, budget: Budget(maxTokens: 1000, targetTokens: 1000)).indices, [3, 2, 1, 0])

        let cases: [(PlaceClosure, String?)] = [
            ({ _, _ in [0] }, "returned 1 positions for 4 items"),
            ({ items, _ in Array(repeating: 0, count: items.count) }, nil),  // not a permutation
            ({ _, _ in throw Refusal("no placing today") }, "no placing today"),
        ]
        for (place, message) in cases {
            let broken = try Pipeline(scorer: Scorer.recency(), slicer: Slicer.greedy(), placer: Placer.custom(place))
            assertThrows(.callback, containing: message) {
                _ = try broken.run(items, budget: Budget(maxTokens: 1000, targetTokens: 1000))
            }
        }
    }
}
