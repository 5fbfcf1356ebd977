// Token counting and chat request trimming: published counts (tiktoken's tests), limits
// and truncation; the bundled sample requests trimmed at several budgets with every tool
// call kept with its results, checked with Foundation's JSON reader; a user message pinned
// so that an Anthropic request starts with one (rule pins); long tool outputs sent as their
// head and tail (shortening); options and errors.
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

    /// `n` distinct words: "w1 w2 … wn".
    private func numberedWords(_ n: Int) -> String {
        (1...n).map { "w\($0)" }.joined(separator: " ")
    }

    /// `text` as the characters of a JSON string (the escapes a JSON writer uses for it).
    private func jsonEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    /// An OpenAI request: a question, a tool call, its result `output` (the characters of a
    /// JSON string), the answer and the next question.
    private func toolRequest(_ output: String) -> String {
        let parts: [String] = [
            #"{"model": "m", "messages": [{"role": "user", "content": "check the logs"},"#,
            #"{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "#,
            #""function": {"name": "logs", "arguments": "{}"}}]},"#,
            #"{"role": "tool", "tool_call_id": "c1", "content": ""#, output, #""},"#,
            #"{"role": "assistant", "content": "the logs are fine"},"#,
            #"{"role": "user", "content": "thanks, and now?"}]}"#,
        ]
        return parts.joined()
    }

    /// The tool message's content in a trimmed `toolRequest`, read with Foundation.
    private func toolContent(_ json: String) throws -> String {
        let body = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let messages = try XCTUnwrap(body["messages"] as? [[String: Any]])
        let tool = try XCTUnwrap(messages.first { $0["role"] as? String == "tool" })
        return try XCTUnwrap(tool["content"] as? String)
    }

    /// The tokens of `toolRequest` with a two-letter output, and `extra` tokens more.
    private func roomForAShortOutput(_ pipeline: Pipeline, extra: Int64) throws -> Int64 {
        let roomy = try Budget(maxTokens: 1_000_000, targetTokens: 1_000_000)
        return try pipeline.trimOpenAI(toolRequest("ok"), budget: roomy).inputTokens + extra
    }

    /// A tool output too long for the budget drops its call with it; with `shorten` the call
    /// stays and the output is sent as its head and tail around the default marker, the
    /// request otherwise unchanged.
    func testALongToolOutputIsSentAsItsHeadAndTail() throws {
        let pipeline = try Pipeline(preset: "chat")
        let o = try TokenEncoding(named: "o200k_base")
        let request = toolRequest(numberedWords(400))
        let max = try roomForAShortOutput(pipeline, extra: 80)
        let budget = try Budget(maxTokens: max, targetTokens: max)
        let plain = try pipeline.trimOpenAI(request, budget: budget)
        XCTAssertGreaterThan(plain.inputTokens, max)
        XCTAssertEqual(plain.kept, [0, 3, 4])
        XCTAssertEqual(plain.dropped, [1, 2])
        XCTAssertEqual(plain.shortened, [])

        var options = ChatOptions(shorten: ChatShortening(headTokens: 20, tailTokens: 10))
        let r = try pipeline.trimOpenAI(request, budget: budget, options: options)
        XCTAssertEqual(r.kept, [0, 1, 2, 3, 4])
        XCTAssertEqual(r.dropped, [])
        XCTAssertEqual(r.shortened, [2])
        XCTAssertLessThanOrEqual(r.tokens, max)
        XCTAssertLessThan(r.tokens, r.inputTokens)
        let content = try toolContent(r.json)
        XCTAssertTrue(content.hasPrefix("w1 w2 w3 w4 w5 "), content)
        XCTAssertTrue(content.hasSuffix(" w398 w399 w400"), content)
        XCTAssertFalse(content.contains(" w200 "), content)
        // Head, marker, tail: the head has at most 20 tokens (more than the tail's 10).
        let open = try XCTUnwrap(content.range(of: "\n[… "))
        let close = try XCTUnwrap(content.range(of: " tokens omitted …]\n"))
        XCTAssertLessThan(open.lowerBound, close.lowerBound)
        let head = try o.count(String(content[..<open.lowerBound]))
        let tail = try o.count(String(content[close.upperBound...]))
        XCTAssertTrue(head <= 20 && head > 10, "\(head)")
        XCTAssertTrue(tail <= 10 && tail > 0, "\(tail)")
        // Only that string was replaced.
        XCTAssertEqual(r.json, toolRequest(jsonEscaped(content)))

        // A fixed quality in (0, 1] is accepted and places the same form here.
        options.shorten?.quality = 0.5
        let fixed = try pipeline.trimOpenAI(request, budget: budget, options: options)
        XCTAssertEqual(fixed.shortened, [2])
        XCTAssertEqual(fixed.json, r.json)
        // When everything fits nothing is shortened.
        let roomy = try pipeline.trimOpenAI(
            request, budget: try Budget(maxTokens: 1_000_000, targetTokens: 1_000_000), options: options)
        XCTAssertEqual(roomy.shortened, [])
        XCTAssertEqual(roomy.json, request)
    }

    /// A quality outside (0, 1], or shortening with a prefix state, is refused.
    func testShorteningOptionsAreChecked() throws {
        let pipeline = try Pipeline(preset: "chat")
        let request = toolRequest(numberedWords(400))
        let max = try roomForAShortOutput(pipeline, extra: 80)
        let budget = try Budget(maxTokens: max, targetTokens: max)
        for quality in [1.5, -0.25, Double.nan] {
            let options = ChatOptions(shorten: ChatShortening(headTokens: 20, tailTokens: 10, quality: quality))
            assertThrows(.invalidArgument, containing: "shorten_quality") {
                _ = try pipeline.trimOpenAI(request, budget: budget, options: options)
            }
        }
        var options = ChatOptions(prefix: PrefixOptions(), shorten: ChatShortening(headTokens: 20, tailTokens: 10))
        assertThrows(.invalidArgument) { _ = try pipeline.trimOpenAI(request, budget: budget, options: options) }
        // Head and tail both 0 is no shortening: the prefix options alone are fine.
        options.shorten = ChatShortening(headTokens: 0, tailTokens: 0)
        XCTAssertEqual(try pipeline.trimOpenAI(request, budget: budget, options: options).shortened, [])
    }

    /// A custom marker goes between head and tail, `{omitted}` replaced by the number of
    /// tokens left out.
    func testACustomMarkerCountsTheTokensLeftOut() throws {
        let pipeline = try Pipeline(preset: "chat")
        let o = try TokenEncoding(named: "o200k_base")
        let output = numberedWords(400)
        let max = try roomForAShortOutput(pipeline, extra: 80)
        let options = ChatOptions(
            shorten: ChatShortening(headTokens: 20, tailTokens: 10, marker: " [[{omitted} tokens cut]] "))
        let r = try pipeline.trimOpenAI(
            toolRequest(output), budget: try Budget(maxTokens: max, targetTokens: max), options: options)
        XCTAssertEqual(r.shortened, [2])
        let content = try toolContent(r.json)
        XCTAssertFalse(content.contains("tokens omitted"), content)
        let open = try XCTUnwrap(content.range(of: " [["))
        let close = try XCTUnwrap(content.range(of: " tokens cut]] "))
        XCTAssertLessThan(open.lowerBound, close.lowerBound)
        let head = String(content[..<open.lowerBound])
        let tail = String(content[close.upperBound...])
        XCTAssertTrue(head.hasPrefix("w1 w2 w3 "), head)
        XCTAssertTrue(tail.hasSuffix(" w399 w400"), tail)
        let omitted = try XCTUnwrap(Int64(content[open.upperBound..<close.lowerBound]))
        XCTAssertEqual(omitted, try o.count(output) - o.count(head) - o.count(tail))
        XCTAssertEqual(r.json, toolRequest(jsonEscaped(content)))
    }
}
