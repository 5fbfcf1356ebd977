// Prefix runs and states through the binding (docs/prefix-cache.md): expectations worked
// out from the rules (20-token messages, the 80 % low watermark, 32-token blocks).
import XCTest

@testable import Ctxpack

final class PrefixTests: XCTestCase {
    /// n messages of 20 tokens, one a day; `edit` appended to message 0.
    func messages(_ n: Int, edit: String = "") throws -> Items {
        try Items((0..<n).map { dated("message \($0)" + ($0 == 0 ? edit : ""), tokens: 20, days: $0) })
    }

    func testHoldKeepsTheWindowAndAppends() throws {
        let p = try pipeline(Scorer.recency())
        let budget = try Budget(maxTokens: 100, targetTokens: 100)
        let t1 = try p.runPrefix(messages(4), budget: budget)
        XCTAssertEqual(t1.reuse.outcome, .anchored)
        XCTAssertNil(t1.reuse.difference)
        let info = try t1.state.info()
        XCTAssertEqual(info.turn, 1)
        XCTAssertEqual(info.entries, 4)
        XCTAssertEqual(info.tokens, 80)
        let t2 = try p.runPrefix(messages(5), budget: budget, previous: t1.state)
        XCTAssertEqual(t2.reuse.outcome, .held)
        XCTAssertEqual(t2.reuse.keptEntries, 4)
        XCTAssertEqual(t2.reuse.keptTokens, 80)
        XCTAssertEqual(t2.result.indices, t1.result.indices + [4])
        XCTAssertTrue(t2.reuse.json.contains("\"outcome\":\"held\""), t2.reuse.json)
    }

    func testMeasureFindsAnEditAndAppliesTheCacheRule() throws {
        let p = try pipeline(Scorer.recency())
        var measure = PrefixOptions(mode: .measure)
        measure.cacheRule = "blocks:32"
        let budget = try Budget(maxTokens: 100, targetTokens: 60)
        let t1 = try p.runPrefix(messages(6), budget: budget, options: measure)
        let t2 = try p.runPrefix(messages(6), budget: budget, options: measure, previous: t1.state)
        XCTAssertEqual(t2.reuse.keptEntries, 3)
        XCTAssertEqual(t2.reuse.cachedTokens, 32)
        let roomy = try Budget(maxTokens: 1000, targetTokens: 1000)
        let t3 = try p.runPrefix(messages(4), budget: roomy, options: measure)
        let t4 = try p.runPrefix(messages(4, edit: "!"), budget: roomy, options: measure, previous: t3.state)
        let d = try XCTUnwrap(t4.reuse.difference)
        XCTAssertEqual(d.reason, .edited)
        XCTAssertEqual(d.index, 0)
        XCTAssertEqual(d.item, 0)
    }

    func testStateFormsRoundTripAndErrors() throws {
        let p = try pipeline(Scorer.recency())
        let budget = try Budget(maxTokens: 100, targetTokens: 100)
        var one = PrefixOptions()
        one.conversation = [1, 0, 2]
        let run = try p.runPrefix(messages(3), budget: budget, options: one)
        let bytes = try run.state.bytes()
        XCTAssertEqual(Array(bytes.prefix(4)), Array("CXPS".utf8))
        XCTAssertEqual(try PrefixState(bytes: bytes).bytes(), bytes)
        XCTAssertEqual(try PrefixState(json: run.state.json()).bytes(), bytes)
        XCTAssertThrowsError(try PrefixState(bytes: Array(bytes.dropLast()))) {
            XCTAssertEqual(($0 as? CtxpackError)?.status, .invalidState)
        }
        var flipped = bytes
        flipped[flipped.count - 5] ^= 1
        XCTAssertThrowsError(try PrefixState(bytes: flipped)) {
            XCTAssertEqual(($0 as? CtxpackError)?.status, .invalidState)
            XCTAssertTrue(($0 as? CtxpackError)?.message.contains("checksum mismatch") ?? false)
        }
        var two = PrefixOptions()
        two.conversation = [1, 0, 3]
        XCTAssertThrowsError(try p.runPrefix(messages(3), budget: budget, options: two, previous: run.state)) {
            XCTAssertEqual(($0 as? CtxpackError)?.status, .invalidState)
        }
        var bad = PrefixOptions()
        bad.cacheRule = "gemini"
        XCTAssertThrowsError(try p.runPrefix(messages(3), budget: budget, options: bad)) {
            XCTAssertEqual(($0 as? CtxpackError)?.status, .invalidArgument)
        }
        bad = PrefixOptions()
        bad.maxValueLoss = 1.5
        XCTAssertThrowsError(try p.runPrefix(messages(3), budget: budget, options: bad)) {
            XCTAssertEqual(($0 as? CtxpackError)?.status, .invalidArgument)
        }
    }
}
