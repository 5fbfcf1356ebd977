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
