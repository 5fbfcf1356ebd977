// examples/quickstart.c through the Swift API: the same selection, printed the same way.
import CCtxpack
import Foundation
import XCTest

@testable import Ctxpack

final class QuickstartTests: XCTestCase {
    /// The expected lines are what the C program printed in this run of run.sh
    /// (CTXPACK_QUICKSTART_C_OUTPUT), not a copy kept here.
    func testQuickstartPrintsWhatTheCExamplePrints() throws {
        let expected = try String(contentsOfFile: environment("CTXPACK_QUICKSTART_C_OUTPUT"), encoding: .utf8)
        let chat: [(content: String, kind: String, tokens: Int64)] = [
            ("You are a concise travel assistant.", "SystemPrompt", 12),
            ("User: I want to visit Lisbon in May.", "Message", 14),
            ("Assistant: Great choice! May is mild and sunny, ideal for walking tours.", "Message", 40),
            ("Tool: flights to LIS from 89 EUR", "ToolOutput", 25),
            ("Memory: the user prefers trains to planes.", "Memory", 10),
            ("User: and how do I get there by train?", "Message", 12),
        ]
        let start = utc(2025, 5, 1, 10)
        let items = try Items(chat.enumerated().map { i, m in
            Item(content: m.content, tokens: m.tokens, kind: m.kind, timestampNs: start + Int64(i) * 60_000_000_000,
                 pinned: i == 0)
        })
        let pipeline = try Pipeline(
            scorer: Scorer.composite([WeightedScorer(Scorer.recency(), weight: 2.0), WeightedScorer(Scorer.kind(), weight: 1.0)]),
            slicer: Slicer.greedy(), placer: Placer.chronological())
        let result = try pipeline.run(items, budget: Budget(maxTokens: 100, targetTokens: 70, outputReserve: 20))

        var printed = "ctxpack \(String(cString: ctxpack_version())) selected \(result.indices.count) of \(chat.count) items:\n"
        for (index, score) in zip(result.indices, result.scores) {
            printed += "  [\(index)] " + String(format: "%.3f", score) + "  " + chat[index].content + "\n"
        }
        XCTAssertEqual(printed, expected)
        XCTAssertFalse(result.indices.isEmpty)
    }
}
