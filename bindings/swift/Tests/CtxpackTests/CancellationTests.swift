// Cancelling runs: a CancelToken from another thread, and Task cancellation.
import Foundation
import XCTest

@testable import Ctxpack

/// A knapsack run that takes seconds unless cancelled: 12 000 items against a 50 000-token
/// target with one-token buckets (a DP of 6 * 10^8 cells).
private func longKnapsack() throws -> (Pipeline, Items, Budget) {
    let p = try Pipeline(scorer: Scorer.priority(), slicer: Slicer.knapsack(bucketSize: 1),
                         placer: Placer.chronological())
    var list: [Item] = []
    for i in 0..<12000 {
        let tokens = Int64(5 + i * 37 % 40)
        let priority = Int64(i % 7)
        list.append(Item(content: "item \(i)", tokens: tokens, priority: priority))
    }
    let items = try Items(list)
    return (p, items, try Budget(maxTokens: 50000, targetTokens: 50000))
}

final class CancellationTests: XCTestCase {
    func testATokenCancelledFromAnotherThreadStopsALongRun() throws {
        let (p, shared, budget) = try longKnapsack()
        let token = try CancelToken()
        XCTAssertFalse(token.isCancelled)
        let canceller = Thread {
            Thread.sleep(forTimeInterval: 0.05)
            token.cancel()
        }
        let started = Date()
        canceller.start()
        XCTAssertThrowsError(try p.run(shared, budget: budget, cancel: token)) { error in
            XCTAssertEqual((error as? CtxpackError)?.status, .cancelled)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.05)
        XCTAssertTrue(token.isCancelled)
    }

    func testATokenNeverCancelledChangesNothing() throws {
        let p = try pipeline(Scorer.recency())
        let items = try Items([dated("a", tokens: 4, days: 1), dated("b", tokens: 4, days: 3), dated("c", tokens: 4, days: 2)])
        let budget = try Budget(maxTokens: 10, targetTokens: 10)
        let plain = try p.run(items, budget: budget, trace: .stage)
        let with = try p.run(items, budget: budget, trace: .stage, cancel: CancelToken())
        XCTAssertEqual(fingerprint(plain), fingerprint(with))
    }

    func testCancellingTheTaskStopsItsRun() async throws {
        let (p, shared, budget) = try longKnapsack()
        let task = Task { try await p.runAsync(shared, budget: budget) }
        try await Task.sleep(nanoseconds: 50_000_000)
        let cancelledAt = Date()
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("the run was not cancelled")
        } catch let error as CtxpackError {
            XCTAssertEqual(error.status, .cancelled)
        }
        XCTAssertLessThan(Date().timeIntervalSince(cancelledAt), 1.0)
    }

    func testATaskCancelledBeforeTheRunStopsIt() async throws {
        let p = try pipeline(Scorer.recency())
        let items = try Items([dated("a", tokens: 4, days: 1)])
        let budget = try Budget(maxTokens: 10, targetTokens: 10)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await p.runAsync(items, budget: budget)
        }
        do {
            _ = try await task.value
            XCTFail("the run was not cancelled")
        } catch let error as CtxpackError {
            XCTAssertEqual(error.status, .cancelled)
            XCTAssertTrue(error.message.contains("before it started"), error.message)
        }
    }
}
