// A Runner (runs into one kept result) answers as Pipeline.runOnce.
import Foundation
import XCTest

@testable import Ctxpack

/// `n` dated items, every seventh repeating the content before it, with priorities.
private func runnerItems(_ n: Int, seed: Int) -> [Item] {
    (0..<n).map { i in
        let c = i % 7 == 6 ? i - 1 : i
        return Item(
            content: "turn \(seed)/\(c)", tokens: Int64(3 + (i * 5 + seed) % 23), priority: Int64((i + seed) % 9),
            timestampNs: jan2024 + Int64(i % 40) * nsPerDay)
    }
}

final class RunnerTests: XCTestCase {
    /// Across sizes, untraced and traced runs and a failing run, every answer is runOnce's,
    /// and a traced result's report stays readable after later runs.
    func testRunsAsRunOnce() throws {
        let p = try pipeline(Scorer.recency())
        let runner = Runner()
        var reports: [(Report, String)] = []
        for (round, n) in [30, 30, 200, 10, 200, 0, 200].enumerated() {
            let items = runnerItems(n, seed: round)
            let total = items.reduce(Int64(0)) { $0 + $1.tokens }
            let budget = try Budget(maxTokens: total + 1, targetTokens: total / 2)
            for trace in [TraceDetail.none, .item] {
                let want = try p.runOnce(items, budget: budget, trace: trace)
                let got = try runner.run(p, items, budget: budget, trace: trace)
                XCTAssertEqual(got.indices, want.indices, "round \(round)")
                XCTAssertEqual(got.scores, want.scores, "round \(round)")
                XCTAssertEqual(got.reasons, want.reasons, "round \(round)")
                XCTAssertEqual(got.report == nil, want.report == nil, "round \(round)")
                if n > 1 { XCTAssertTrue(got.indices.count > 1 && got.indices.count < n, "a telling comparison") }
                if let report = got.report { reports.append((report, "\(report.included)")) }
            }
            if round == 3 {
                let bad = [Item(content: "ok", tokens: 1), Item(content: "", tokens: 1)]
                XCTAssertThrowsError(try runner.run(p, bad, budget: budget))
            }
        }
        for (report, included) in reports { XCTAssertEqual("\(report.included)", included) }
    }

    /// `releaseMemory` frees what the pipeline keeps between one-shot runs: runs before and
    /// after it answer the same, untraced and traced, and it may be called again with
    /// nothing kept.
    func testReleaseMemoryBetweenOneShotRuns() throws {
        let p = try Pipeline(preset: "chat")
        let items = runnerItems(300, seed: 3)
        let total = items.reduce(Int64(0)) { $0 + $1.tokens }
        let budget = try Budget(maxTokens: total, targetTokens: total / 2)
        try p.releaseMemory()  // nothing kept yet
        for trace in [TraceDetail.none, .item] {
            let first = try p.runOnce(items, budget: budget, trace: trace)
            XCTAssertTrue(first.indices.count > 1 && first.indices.count < items.count, "a telling comparison")
            XCTAssertEqual(first.report == nil, trace == .none)
            for (step, release) in [false, true, false, true, true, false].enumerated() {
                if release { try p.releaseMemory() }
                let again = try p.runOnce(items, budget: budget, trace: trace)
                XCTAssertEqual(fingerprint(again), fingerprint(first), "\(trace), step \(step)")
            }
        }
    }

    /// One-shot runs of differing sizes on 8 threads, with `releaseMemory` called among
    /// them from the same threads: every answer is the sequential one.
    func testReleaseMemoryDuringOneShotRunsOnManyThreads() throws {
        let p = try Pipeline(preset: "chat")
        let budget = try Budget(maxTokens: 10_000, targetTokens: 400)
        let inputs = (0..<8).map { g in runnerItems(40 + g * 30, seed: g) }
        let expected = try inputs.map { try p.runOnce($0, budget: budget).indices }
        for (g, want) in expected.enumerated() {
            XCTAssertTrue(want.count > 1 && want.count < inputs[g].count, "a telling comparison")
        }
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { g in
            for r in 0..<40 {
                do {
                    if (g + r) % 5 == 0 { try p.releaseMemory() }
                    let k = (g + r) % inputs.count
                    let got = try p.runOnce(inputs[k], budget: budget).indices
                    if got != expected[k] { failures.withLock { $0.append("thread \(g), run \(r) differs") } }
                } catch {
                    failures.withLock { $0.append("thread \(g), run \(r): \(error)") }
                }
            }
        }
        XCTAssertEqual(failures.current, [])
    }

    /// Threads sharing one Runner are serialised: every answer is runOnce's.
    func testSharedByThreads() throws {
        let p = try pipeline(Scorer.recency())
        let runner = Runner()
        let budget = try Budget(maxTokens: 10_000, targetTokens: 400)
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { g in
            for _ in 0..<20 {
                let items = runnerItems(20 + g * 10, seed: g)
                let want = try? p.runOnce(items, budget: budget).indices
                let got = try? runner.run(p, items, budget: budget).indices
                if want == nil || got != want { failures.withLock { $0 += 1 } }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, 0)
    }
}
