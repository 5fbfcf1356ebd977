// Token counting and chat request trimming: published counts (tiktoken's tests), limits
// and truncation; the bundled sample requests trimmed at several budgets with every tool
// call kept with its results, checked with Foundation's JSON reader; a user message pinned
// so that an Anthropic request starts with one (rule pins); options and errors.
import Foundation
import XCTest

@testable import Ctxpack

final class ChatTests: XCTestCase {
    func testEncodingPublishedCounts() throws {
        let cl = try TokenEncoding(named: "cl100k_base")
        let o = try TokenEncoding(named: "O200K_BASE")
        XCTAssertEqual(cl.name, "cl100k_base")
        XCTAssertEqual(o.name, "o200k_base")
        XCTAssertEqual(try cl.count("hello world"), 2)
        XCTAssertEqual(try cl.count("tiktoken is great!"), 6)
        XCTAssertEqual(try o.count("antidisestablishmentarianism"), 6)
        XCTAssertEqual(try o.count("2 + 2 = 4"), 7)
        XCTAssertEqual(try cl.count("お誕生日おめでとう"), 9)
        XCTAssertEqual(try o.count("お誕生日おめでとう"), 8)
        XCTAssertEqual(try o.count(""), 0)
        assertThrows(.invalidArgument, containing: "o200k_base, cl100k_base") { _ = try TokenEncoding(named: "p50k_base") }
    }

    func testEncodingLimitAndTruncate() throws {
        let o = try TokenEncoding(named: "o200k_base")
        let text = String(repeating: "Budgets are finite; choose well. ", count: 100) + "終わり🦀"
        let full = try o.count(text)
        XCTAssertEqual(try o.count(text, limit: full), full)
        XCTAssertNil(try o.count(text, limit: 3))
        for max in [0, 1, 9, full - 1, full] {
            let cut = try o.truncate(text, maxTokens: max)
            XCTAssertTrue(text.hasPrefix(cut.text))
            XCTAssertLessThanOrEqual(cut.tokens, max)
            XCTAssertEqual(try o.count(cut.text), cut.tokens)
        }
        XCTAssertEqual(try o.truncate(text, maxTokens: full).text, text)
        XCTAssertEqual(try o.truncate(text, maxTokens: 0).text, "")
        assertThrows(.invalidArgument) { _ = try o.count("x", limit: -1) }
        assertThrows(.invalidArgument) { _ = try o.truncate("x", maxTokens: -1) }
    }

    /// The request's messages, each re-serialised the same way, and its calls and results.
    private func read(_ json: String, _ format: ChatFormat) throws -> (messages: [String], calls: [String], results: [String]) {
        let body = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let messages = try XCTUnwrap(body["messages"] as? [[String: Any]])
        var calls: [String] = []
        var results: [String] = []
        for m in messages {
            if format == .openAI {
                for c in (m["tool_calls"] as? [[String: Any]]) ?? [] { calls.append(try XCTUnwrap(c["id"] as? String)) }
                if let id = m["tool_call_id"] as? String { results.append(id) }
            } else {
                for b in (m["content"] as? [[String: Any]]) ?? [] {
                    if b["type"] as? String == "tool_use" { calls.append(try XCTUnwrap(b["id"] as? String)) }
                    if b["type"] as? String == "tool_result" { results.append(try XCTUnwrap(b["tool_use_id"] as? String)) }
                }
            }
        }
        let canonical = try messages.map {
            String(decoding: try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]), as: UTF8.self)
        }
        return (canonical, calls.sorted(), results.sorted())
    }

    func testSamplesKeepEveryCallWithItsResults() throws {
        let pipeline = try Pipeline(preset: "chat")
        for (format, name) in [(ChatFormat.openAI, "openai"), (.anthropic, "anthropic")] {
            let url = repositoryRoot.appendingPathComponent("examples/data/\(name)-request.json")
            let request = try String(contentsOf: url, encoding: .utf8)
            let input = try read(request, format)
            XCTAssertGreaterThanOrEqual(input.calls.count, 4)
            XCTAssertEqual(input.calls, input.results)
            var droppedSome = false
            for max: Int64 in [100_000, 6000, 3000, 1500] {
                let r = try pipeline.trimChat(
                    request, format: format, budget: try Budget(maxTokens: max, targetTokens: max),
                    options: ChatOptions(trace: .item))
                let output = try read(r.json, format)
                XCTAssertEqual(output.calls, output.results, "\(name) at \(max)")
                // The output's messages are the input's kept ones.
                XCTAssertEqual(output.messages, r.kept.map { input.messages[$0] }, "\(name) at \(max)")
                XCTAssertEqual((r.kept + r.dropped).sorted(), Array(0..<input.messages.count))
                XCTAssertLessThanOrEqual(r.tokens, max)
                XCTAssertLessThanOrEqual(r.tokens, r.inputTokens)
                XCTAssertEqual(r.dropped.isEmpty, r.json == request)
                droppedSome = droppedSome || !r.dropped.isEmpty
                let report = try XCTUnwrap(r.selection.report)
                XCTAssertEqual(report.summary.totalCandidates, r.itemPaths.count)
                let dropped = Set(r.dropped.map { "messages[\($0)]" })
                for e in report.excluded { XCTAssertTrue(dropped.contains(r.itemPaths[e.index]), r.itemPaths[e.index]) }
                for i in r.selection.indices { XCTAssertFalse(dropped.contains(r.itemPaths[i]), r.itemPaths[i]) }
                XCTAssertTrue(r.adjustments.isEmpty)
                XCTAssertTrue(r.rulePins.isEmpty)
            }
            XCTAssertTrue(droppedSome, name)
        }
    }

    /// An Anthropic agent turn: the task, a tool call with a long result, a short answer and
    /// the next question, with `first` (messages and their commas) before it.
    private func agentTurn(_ first: String = "") -> String {
        let result = Array(repeating: "result", count: 20).joined(separator: " ")
        let parts: [String] = [
            #"{"messages": ["#, first,
            #"{"role": "user", "content": "ten words about the task we are working on today"},"#,
            #"{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "search", "input": {}}]},"#,
            #"{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": ""#, result, #""}]},"#,
            #"{"role": "assistant", "content": "short answer"},"#,
            #"{"role": "user", "content": "next question"}]}"#,
        ]
        return parts.joined()
    }

    /// When the selection would start an Anthropic request with an assistant message, a user
    /// message is pinned for a second run if that keeps more than dropping the leading units.
    func testAUserMessageIsPinnedRatherThanLosingTheLeadingUnits() throws {
        let pipeline = try Pipeline(preset: "chat")
        let roomy = try Budget(maxTokens: 1_000_000, targetTokens: 1_000_000)
        // Two user messages in a row are one turn to Anthropic: repeating the first message
        // measures its tokens.
        let all = try pipeline.trimAnthropic(agentTurn(), budget: roomy).inputTokens
        let repeated = #"{"role": "user", "content": "ten words about the task we are working on today"},"#
        let first = try pipeline.trimAnthropic(agentTurn(repeated), budget: roomy).inputTokens - all
        XCTAssertGreaterThan(all, 0)
        XCTAssertGreaterThan(first, 0)
        // Room for everything but the first message, which the pipeline leaves out: the
        // selection would start with the tool call. Pinning the first message and running
        // again keeps it, the answer and the question; dropping would keep the question alone.
        let r = try pipeline.trimAnthropic(
            agentTurn(), budget: try Budget(maxTokens: all - first, targetTokens: all - first))
        XCTAssertEqual(r.kept, [0, 3, 4])
        XCTAssertTrue(r.adjustments.isEmpty)
        XCTAssertEqual(r.rulePins.count, 1)
        let pin = try XCTUnwrap(r.rulePins.first)
        XCTAssertEqual(pin.path, "messages[0]")
        XCTAssertTrue(pin.reason.contains("starts with a user message"), pin.reason)
    }

    func testATrimIsCancellable() async throws {
        let pipeline = try Pipeline(preset: "chat")
        let budget = try Budget(maxTokens: 100_000, targetTokens: 100_000)
        let url = repositoryRoot.appendingPathComponent("examples/data/openai-request.json")
        let request = try String(contentsOf: url, encoding: .utf8)
        // A token never cancelled changes nothing.
        let plain = try pipeline.trimOpenAI(request, budget: budget)
        let live = try pipeline.trimOpenAI(request, budget: budget, options: ChatOptions(cancel: CancelToken()))
        XCTAssertEqual(plain.json, live.json)
        // Cancelled before the call.
        let token = try CancelToken()
        token.cancel()
        XCTAssertThrowsError(try pipeline.trimOpenAI(request, budget: budget, options: ChatOptions(cancel: token))) {
            XCTAssertEqual(($0 as? CtxpackError)?.status, .cancelled)
        }
        // Cancelled by a scorer during the run: the run checks before its next scorer call.
        let inner = try CancelToken()
        let custom = try Pipeline(
            scorer: Scorer.custom { _, _ in
                inner.cancel()
                return 0.5
            }, slicer: Slicer.greedy(), placer: Placer.chronological())
        XCTAssertThrowsError(try custom.trimOpenAI(request, budget: budget, options: ChatOptions(cancel: inner))) {
            XCTAssertEqual(($0 as? CtxpackError)?.status, .cancelled)
        }
        // A task cancelled before its trim.
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await pipeline.trimChatAsync(request, format: .openAI, budget: budget)
        }
        do {
            _ = try await task.value
            XCTFail("the trim was not cancelled")
        } catch let error as CtxpackError {
            XCTAssertEqual(error.status, .cancelled)
        }
        // A task never cancelled trims as the synchronous call does.
        let asyncResult = try await pipeline.trimChatAsync(request, format: .openAI, budget: budget)
        XCTAssertEqual(asyncResult.json, plain.json)
    }

    func testChatOptionsAndErrors() throws {
        let pipeline = try Pipeline(preset: "chat")
        let roomy = try Budget(maxTokens: 100_000, targetTokens: 100_000)
        let request = #"{"messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]}"#
        let none = try pipeline.trimOpenAI(request, budget: roomy, options: ChatOptions(overheads: ChatOverheads()))
        let framed = try pipeline.trimOpenAI(
            request, budget: roomy, options: ChatOptions(overheads: ChatOverheads(perMessage: 5, perRequest: 2)))
        XCTAssertEqual(framed.inputTokens - none.inputTokens, 12)
        let o = try TokenEncoding(named: "o200k_base")
        XCTAssertEqual(
            none.inputTokens, try o.count("user") + o.count("Hi.") + o.count("assistant") + o.count("Hello."))
        XCTAssertNil(try pipeline.trimOpenAI(request, budget: roomy).selection.report)
        XCTAssertGreaterThan(try pipeline.trimOpenAI(request, budget: roomy, options: ChatOptions(encoding: "cl100k_base")).inputTokens, 0)

        assertThrows(.invalidRequest, containing: "$: malformed JSON") { _ = try pipeline.trimOpenAI("{\"messages\": [", budget: roomy) }
        let openai = try String(contentsOf: repositoryRoot.appendingPathComponent("examples/data/openai-request.json"), encoding: .utf8)
        assertThrows(.invalidRequest, containing: "messages[0].role") { _ = try pipeline.trimAnthropic(openai, budget: roomy) }
        assertThrows(.invalidArgument, containing: "options.encoding") {
            _ = try pipeline.trimOpenAI(request, budget: roomy, options: ChatOptions(encoding: "gpt2"))
        }
        assertThrows(.invalidArgument, containing: "overhead_media") {
            _ = try pipeline.trimOpenAI(request, budget: roomy, options: ChatOptions(overheads: ChatOverheads(media: -1)))
        }
        assertThrows(.pinnedExceedsBudget) {
            _ = try pipeline.trimOpenAI(openai, budget: try Budget(maxTokens: 50, targetTokens: 50))
        }
    }

    /// A trim can carry a prefix state across turns: the same request trimmed again with the
    /// first turn's state gives the same request and reuses all of it; another conversation's
    /// state is refused; without `prefix` there is no reuse report and no state.
    func testPrefixStateAcrossTurns() throws {
        let pipeline = try Pipeline(preset: "chat")
        let budget = try Budget(maxTokens: 6000, targetTokens: 4000)
        let url = repositoryRoot.appendingPathComponent("examples/data/openai-request.json")
        let request = try String(contentsOf: url, encoding: .utf8)
        var prefix = PrefixOptions()
        prefix.conversation = Array("conversation-1".utf8)
        prefix.cacheRule = "openai"
        let first = try pipeline.trimOpenAI(request, budget: budget, options: ChatOptions(prefix: prefix))
        let u1 = try XCTUnwrap(first.reuse)
        let s1 = try XCTUnwrap(first.state)
        XCTAssertEqual(u1.turn, 1)
        XCTAssertEqual(u1.previousEntries, 0)
        XCTAssertLessThan(first.json.utf8.count, request.utf8.count)
        let second = try pipeline.trimOpenAI(
            request, budget: budget, options: ChatOptions(prefix: prefix, previousState: s1))
        let u2 = try XCTUnwrap(second.reuse)
        XCTAssertEqual(second.json, first.json)
        XCTAssertEqual(u2.turn, 2)
        XCTAssertNil(u2.difference)
        XCTAssertEqual(u2.keptEntries, u2.windowEntries)
        XCTAssertEqual(u2.keptTokens, u1.windowTokens)
        XCTAssertTrue(u2.json.contains("\"kept_entries\""))
        var other = PrefixOptions()
        other.conversation = Array("conversation-2".utf8)
        assertThrows(.invalidState) {
            _ = try pipeline.trimOpenAI(request, budget: budget, options: ChatOptions(prefix: other, previousState: s1))
        }
        assertThrows(.invalidArgument, containing: "previous_state") {
            _ = try pipeline.trimOpenAI(request, budget: budget, options: ChatOptions(previousState: s1))
        }
        let plain = try pipeline.trimOpenAI(request, budget: budget)
        XCTAssertNil(plain.reuse)
        XCTAssertNil(plain.state)
        XCTAssertEqual(plain.json, first.json)
    }
}
