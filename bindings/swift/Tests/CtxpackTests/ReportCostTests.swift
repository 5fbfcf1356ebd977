// What a report costs (docs/performance.md, "Bindings: a report costs only when it is
// read"): the inputs of the Go, C# and C++ report benchmarks (2 000 items, five kinds, two
// tags each, priorities, timestamps, the Chat preset, a 50 000-token target within
// 100 000, one item list). The test always checks a traced run of those inputs against an
// untraced one; with CTXPACK_SWIFT_BENCH=1 it also times 200 runs each of: untraced,
// traced at item detail with nothing read, traced with the JSON read, alternating, and
// prints the medians and quartiles (CTXPACK_SWIFT_BENCH_REPS changes the count).
import Foundation
import XCTest

@testable import Ctxpack

final class ReportCostTests: XCTestCase {
    /// The benchmark's 2 000 items.
    static func benchItems() -> [Item] {
        let kinds = ["Message", "Document", "ToolOutput", "Memory", "SystemPrompt"]
        return (0..<2000).map { (i: Int) -> Item in
            let tokens = Int64(20 + (i * 37 % 400))
            let tags: [String] = ["t\(i % 13)", "u\(i % 7)"]
            let timestamp: Int64 = jan2024 + Int64(i) * 1_000_000_000
            return Item(
                content: "item \(i) with some content", tokens: tokens, kind: kinds[i % 5], priority: Int64(i % 10),
                tags: tags, timestampNs: timestamp)
        }
    }

    func testReportCostAt2000Items() throws {
        let pipeline = try Pipeline(preset: "Chat")
        let items = try Items(Self.benchItems())
        let budget = try Budget(maxTokens: 100_000, targetTokens: 50_000)

        let untraced = try pipeline.run(items, budget: budget)
        XCTAssertNil(untraced.report)
        let traced = try pipeline.run(items, budget: budget, trace: .item)
        XCTAssertEqual(traced.indices, untraced.indices)
        let report = try XCTUnwrap(traced.report)
        XCTAssertEqual(report.summary.totalCandidates, 2000)
        XCTAssertEqual(report.included.map(\.index), traced.indices)
        XCTAssertEqual(report.included.count + report.excluded.count, 2000)
        XCTAssertTrue(report.json.hasPrefix("{"))

        guard ProcessInfo.processInfo.environment["CTXPACK_SWIFT_BENCH"] == "1" else { return }
        let reps = Int(ProcessInfo.processInfo.environment["CTXPACK_SWIFT_BENCH_REPS"] ?? "") ?? 200
        var untracedMs: [Double] = [], tracedMs: [Double] = [], jsonMs: [Double] = []
        var sink = 0
        for _ in 0..<reps {
            var start = DispatchTime.now()
            sink &+= try pipeline.run(items, budget: budget).indices.count
            untracedMs.append(Self.ms(since: start))
            start = DispatchTime.now()
            sink &+= try pipeline.run(items, budget: budget, trace: .item).report == nil ? 0 : 1
            tracedMs.append(Self.ms(since: start))
            start = DispatchTime.now()
            sink &+= try pipeline.run(items, budget: budget, trace: .item).report?.json.utf8.count ?? 0
            jsonMs.append(Self.ms(since: start))
        }
        XCTAssertGreaterThan(sink, 0)
        for (name, times) in [
            ("untraced", untracedMs), ("traced (item), nothing read", tracedMs), ("traced (item), JSON read", jsonMs),
        ] {
            let v = times.sorted()
            let quartiles = [v[v.count / 2], v[v.count / 4], v[v.count * 3 / 4]].map { String(format: "%.3f", $0) }
            print(
                "report cost: \(name): median \(quartiles[0]) ms",
                "(quartiles \(quartiles[1]) - \(quartiles[2])), \(v.count) runs")
        }
    }

    private static func ms(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6
    }
}
