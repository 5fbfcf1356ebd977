// One pipeline run from 16 threads, and from 16 tasks of Swift concurrency, at once; every
// result must equal the sequential run of the same input.
import Foundation
import XCTest

@testable import Ctxpack

/// Everything a run returns except wall-clock durations (in the events and the JSON).
func fingerprint(_ r: RunResult) -> String {
    var parts = ["\(r.indices)", "\(r.scores)", "\(r.reasons)", "\(String(describing: r.overflow))"]
    if let report = r.report {
        parts += ["\(report.summary)", "\(report.included)", "\(report.excluded)", "\(report.shortfalls)"]
        parts += report.events.map { "\(String(describing: $0.stage)) \($0.itemCount) \(String(describing: $0.message)) \(String(describing: $0.itemIndex))" }
    }
    return parts.joined(separator: "\n")
}

final class ConcurrencyTests: XCTestCase {
    /// 16 threads × 20 runs of one pipeline whose composite scorer includes a Swift
    /// closure (so the closure runs concurrently), over one shared item list or over a
    /// list of the thread's own, traced at item detail.
    func testSixteenThreadsShareOnePipeline() throws {
        let threads = 16, runsEach = 20, n = 120
        let kinds = ["Message", "Document", "ToolOutput"]
        let list: [Item] = (0..<n).map { (i: Int) -> Item in
            let content = "item \(i) " + String(repeating: "x", count: i % 13)
            let timestamp: Int64 = jan2024 + Int64(i % 40) * nsPerDay
            return Item(content: content, tokens: Int64(5 + i % 17), kind: kinds[i % 3], timestampNs: timestamp,
                        pinned: i % 25 == 0)
        }
        let calls = Locked(0)
        let byLength = try Scorer.custom { items, index in
            calls.withLock { $0 += 1 }
            return Double(items[index].content.utf8.count) / 100
        }
        let scorer = try Scorer.composite([
            WeightedScorer(byLength, weight: 1), WeightedScorer(Scorer.kind(), weight: 1),
            WeightedScorer(Scorer.recency(), weight: 2),
        ])
        let p = try Pipeline(scorer: scorer, slicer: Slicer.greedy(), placer: Placer.chronological(),
                             overflowStrategy: .truncate)
        let shared = try Items(list)
        let budget = try Budget(maxTokens: 800, targetTokens: 600, outputReserve: 50)

        let reference = try p.run(shared, budget: budget, trace: .item)
        XCTAssertFalse(reference.indices.isEmpty)
        XCTAssertFalse(try XCTUnwrap(reference.report).excluded.isEmpty, "the test needs exclusions")
        let expected = fingerprint(reference)

        let failures = Locked<[String]>([])
        let done = DispatchGroup()
        for t in 0..<threads {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                for r in 0..<runsEach {
                    do {
                        let items = (t + r) % 2 == 0 ? shared : try Items(list)
                        let got = try p.run(items, budget: budget, trace: .item)
                        if fingerprint(got) != expected {
                            failures.withLock { $0.append("thread \(t) run \(r) differs from the sequential run") }
                        }
                    } catch {
                        failures.withLock { $0.append("thread \(t) run \(r): \(error)") }
                    }
                }
            }
            thread.start()
        }
        done.wait()
        XCTAssertEqual(failures.current, [])
        // Pinned items are not scored.
        XCTAssertEqual(calls.current, list.filter { !$0.pinned }.count * (1 + threads * runsEach))
    }

    /// 16 child tasks share one preset pipeline, each running 100 differing inputs (items,
    /// sizes and budget vary) that neighbouring tasks run at the same time.
    func testSixteenTasksMatchSequentialRuns() async throws {
        let tasks = 16, runsEach = 100
        let p = try Pipeline(preset: "chat")
        let kinds = ["Message", "Document", "ToolOutput", "Memory", "SystemPrompt"]
        let inputs: [(items: [Item], target: Int64)] = (0..<tasks * runsEach).map { k in
            let items = (0..<(3 + k % 29)).map { i -> Item in
                let r = UInt64(k) &* 2_654_435_761 &+ UInt64(i) &* 40503
                return Item(content: "input \(k % 97) item \((r >> 3) % 11)", tokens: Int64(r % 90) - 3,
                            kind: kinds[Int((r >> 5) % 5)], timestampNs: jan2024 + Int64(r % 100_000) * 1_000_000_000,
                            pinned: i == 0 && k % 4 == 0)
            }
            return (items, Int64(50 + k % 400))
        }
        // Outcome of one input: the result's fingerprint or the error.
        @Sendable func outcome(_ k: Int) -> String {
            do {
                return fingerprint(try p.run(Items(inputs[k].items),
                                             budget: Budget(maxTokens: 2000, targetTokens: inputs[k].target)))
            } catch {
                return "error: \(error)"
            }
        }
        let expected = (0..<inputs.count).map(outcome)
        XCTAssertTrue(expected.contains { !$0.hasPrefix("error") })

        let mismatches = await withTaskGroup(of: [Int].self) { group in
            for t in 0..<tasks {
                group.addTask {
                    (0..<runsEach).map { r in r * tasks + t }.filter { outcome($0) != expected[$0] }
                }
            }
            var all: [Int] = []
            for await found in group { all += found }
            return all
        }
        XCTAssertEqual(mismatches, [], "inputs whose concurrent result differs from the sequential one")
    }
}
