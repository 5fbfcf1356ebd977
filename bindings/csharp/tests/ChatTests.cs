using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text.RegularExpressions;
using System.Threading;

namespace Ctxpack.Tests
{
    /// Token counting and chat request trimming through the C ABI: published counts
    /// (tiktoken's tests), limits and truncation, the bundled sample requests trimmed at
    /// several budgets with every tool call kept with its results, options and errors.
    static class ChatTests
    {
        static string Sample(string name) =>
            File.ReadAllText(Path.Combine(ConformanceVectors.RepoRoot, "examples/data", name + "-request.json"));

        /// The values of "key": "…" in text, sorted.
        static List<string> Values(string text, string key) =>
            Regex.Matches(text, "\"" + key + "\": \"([^\"]*)\"").Cast<Match>().Select(m => m.Groups[1].Value)
                .OrderBy(v => v, StringComparer.Ordinal).ToList();

        [Test]
        public static void EncodingCountsPublishedExamples()
        {
            var cl = TokenEncoding.Get("cl100k_base");
            var o = TokenEncoding.Get("O200K_BASE");
            Assert.Equal("cl100k_base", cl.Name, "name");
            Assert.Equal("o200k_base", o.Name, "name");
            Assert.Equal(2L, cl.Count("hello world"), "hello world");
            Assert.Equal(6L, cl.Count("tiktoken is great!"), "tiktoken");
            Assert.Equal(6L, o.Count("antidisestablishmentarianism"), "antidis…");
            Assert.Equal(7L, o.Count("2 + 2 = 4"), "arithmetic");
            Assert.Equal(9L, cl.Count("お誕生日おめでとう"), "cl100k Japanese");
            Assert.Equal(8L, o.Count("お誕生日おめでとう"), "o200k Japanese");
            Assert.Equal(0L, o.Count(""), "empty");
        }

        [Test]
        public static void EncodingLimitAndTruncate()
        {
            var o = TokenEncoding.Get("o200k_base");
            var text = string.Concat(Enumerable.Repeat("Budgets are finite; choose well. ", 100)) + "終わり🦀";
            var full = o.Count(text);
            Assert.Equal((long?)full, o.CountWithLimit(text, full), "at the limit");
            Assert.Equal((long?)null, o.CountWithLimit(text, 3), "over the limit");
            foreach (var max in new[] { 0L, 1L, 9L, full - 1, full })
            {
                var prefix = o.Truncate(text, max, out var tokens);
                Assert.True(text.StartsWith(prefix, StringComparison.Ordinal), $"Truncate({max}) is a prefix");
                Assert.True(tokens <= max, $"Truncate({max}) has {tokens} tokens");
                Assert.Equal(o.Count(prefix), tokens, $"Truncate({max}) count");
            }
            Assert.Equal(text, o.Truncate(text, full), "a text that fits");
            Assert.Equal("", o.Truncate(text, 0), "zero tokens");
            Assert.Fails(Status.InvalidArgument, () => TokenEncoding.Get("p50k_base"), "unknown encoding");
            Assert.Fails(Status.InvalidArgument, () => o.CountWithLimit("x", -1), "negative limit");
            Assert.Fails(Status.InvalidArgument, () => o.Truncate("x", -1), "negative max");
        }

        [Test]
        public static void SamplesKeepEveryCallWithItsResults()
        {
            using (var pipeline = Pipeline.FromPreset("chat"))
            {
                foreach (var format in new[] { ChatFormat.OpenAi, ChatFormat.Anthropic })
                {
                    var name = format == ChatFormat.OpenAi ? "openai" : "anthropic";
                    var answerKey = format == ChatFormat.OpenAi ? "tool_call_id" : "tool_use_id";
                    var request = Sample(name);
                    var calls = Values(request, "id");
                    Assert.True(calls.Count >= 4, $"{name}: {calls.Count} calls");
                    Assert.Sequence(calls, Values(request, answerKey), $"{name}: every call answered");
                    var droppedSome = false;
                    foreach (var max in new[] { 100000L, 6000L, 3000L, 1500L })
                    {
                        using (var budget = new Budget(max, max))
                        {
                            var r = Chat.Trim(format, request, budget, pipeline, new ChatOptions { Trace = TraceDetail.Item });
                            Assert.Sequence(Values(r.Json, "id"), Values(r.Json, answerKey), $"{name} at {max}: calls and results");
                            Assert.True(r.Tokens <= max && r.Tokens <= r.InputTokens, $"{name} at {max}: {r.Tokens} tokens");
                            Assert.Sequence(Enumerable.Range(0, r.Kept.Count + r.Dropped.Count),
                                r.Kept.Concat(r.Dropped).OrderBy(i => i), $"{name} at {max}: kept and dropped");
                            Assert.Equal(r.Dropped.Count == 0, r.Json == request, $"{name} at {max}: unchanged when all fit");
                            droppedSome |= r.Dropped.Count > 0;
                            var dropped = new HashSet<string>(r.Dropped.Select(d => $"messages[{d}]"));
                            var report = r.Selection.Report;
                            Assert.True(report != null, "traced");
                            Assert.Equal(r.ItemPaths.Count, report.TotalCandidates, "candidates");
                            foreach (var e in report.Excluded)
                                Assert.True(dropped.Contains(r.ItemPaths[e.Index]), $"excluded {r.ItemPaths[e.Index]} is dropped");
                            foreach (var i in r.Selection.Indices)
                                Assert.True(!dropped.Contains(r.ItemPaths[i]), $"selected {r.ItemPaths[i]} is kept");
                            Assert.Equal(0, r.Adjustments.Count, "adjustments");
                            if (format == ChatFormat.OpenAi)
                                Assert.Equal(0, r.RulePins.Count, $"{name} at {max}: rule pins (Anthropic's rule only)");
                        }
                    }
                    Assert.True(droppedSome, $"{name}: some budget drops messages");
                }
            }
        }

        /// An Anthropic request after first (more messages, or ""): the task, a tool call with a
        /// long result, a short answer and the next question.
        static string AgentTurn(string first) =>
            "{\"messages\": [" + first + "{\"role\": \"user\", \"content\": \"ten words about the task we are working on today\"}," +
            "{\"role\": \"assistant\", \"content\": [{\"type\": \"tool_use\", \"id\": \"t1\", \"name\": \"search\", \"input\": {}}]}," +
            "{\"role\": \"user\", \"content\": [{\"type\": \"tool_result\", \"tool_use_id\": \"t1\", \"content\": \"" +
            string.Join(" ", Enumerable.Repeat("result", 20)) + "\"}]}," +
            "{\"role\": \"assistant\", \"content\": \"short answer\"}," +
            "{\"role\": \"user\", \"content\": \"next question\"}]}";

        /// When the selection would start an Anthropic request with the assistant's tool call,
        /// a user message is pinned for a second run rather than losing the leading units, as
        /// in tests/c/test_chat.c.
        [Test]
        public static void AUserMessageIsPinnedRatherThanLosingTheLeadingUnits()
        {
            using (var pipeline = Pipeline.FromPreset("chat"))
            using (var roomy = new Budget(1000000, 1000000))
            {
                // Two user messages in a row are one turn to Anthropic: repeating the first
                // message measures its tokens.
                var all = Chat.TrimAnthropic(AgentTurn(""), roomy, pipeline).InputTokens;
                var first = Chat.TrimAnthropic(
                    AgentTurn("{\"role\": \"user\", \"content\": \"ten words about the task we are working on today\"},"),
                    roomy, pipeline).InputTokens - all;
                Assert.True(all > 0 && first > 0, $"all {all}, first {first}");
                // Room for everything but the first message, which the pipeline leaves out: the
                // selection would start with the tool call. Pinning the first message and
                // running again keeps it, the answer and the question; dropping would keep the
                // question alone.
                using (var budget = new Budget(all - first, all - first))
                {
                    var r = Chat.TrimAnthropic(AgentTurn(""), budget, pipeline);
                    Assert.Sequence(new[] { 0, 3, 4 }, r.Kept, "kept");
                    Assert.Equal(0, r.Adjustments.Count, "adjustments");
                    Assert.Equal(1, r.RulePins.Count, "rule pins");
                    Assert.Equal("messages[0]", r.RulePins[0].Path, "rule pin path");
                    Assert.True(r.RulePins[0].Reason.Contains("starts with a user message"), $"reason: {r.RulePins[0].Reason}");
                }
                Assert.Equal(0, Chat.TrimAnthropic(AgentTurn(""), roomy, pipeline).RulePins.Count, "everything fits: no rule pin");
            }
        }

        [Test]
        public static void ATrimIsCancellable()
        {
            var request = Sample("openai");
            using (var pipeline = Pipeline.FromPreset("chat"))
            using (var roomy = new Budget(100000, 100000))
            using (var source = new CancellationTokenSource())
            {
                // A token never cancelled changes nothing.
                Assert.Equal(Chat.TrimOpenAi(request, roomy, pipeline).Json,
                    Chat.TrimOpenAi(request, roomy, pipeline, null, source.Token).Json, "same output with a live token");

                var cancelled = new CancellationToken(true);
                var e = Assert.Throws<OperationCanceledException>(() =>
                    Chat.TrimOpenAi(request, roomy, pipeline, null, cancelled));
                Assert.Equal(cancelled, e.CancellationToken, "the exception's token");
                Assert.Equal(Status.Cancelled, ((CtxpackException)e.InnerException).Status, "status");

                // Cancelled from inside the run: a scorer cancels the source; the run stops at
                // its next check.
                using (var scorer = Scorer.Custom(items =>
                       {
                           source.Cancel();
                           return items.Select(_ => 0.5).ToList();
                       }))
                using (var slicer = Slicer.Greedy())
                using (var placer = Placer.Chronological())
                using (var custom = new Pipeline(scorer, slicer, placer))
                {
                    var inner = Assert.Throws<OperationCanceledException>(() =>
                        Chat.TrimAnthropic(Sample("anthropic"), roomy, custom, null, source.Token));
                    Assert.Equal(source.Token, inner.CancellationToken, "the source's token");
                }
            }
        }

        [Test]
        public static void ChatOptionsAndErrors()
        {
            const string request = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi.\"}, " +
                                   "{\"role\": \"assistant\", \"content\": \"Hello.\"}]}";
            using (var pipeline = Pipeline.FromPreset("chat"))
            using (var roomy = new Budget(100000, 100000))
            using (var small = new Budget(50, 50))
            {
                var none = Chat.TrimOpenAi(request, roomy, pipeline, new ChatOptions { Overheads = new ChatOverheads() });
                var framed = Chat.TrimOpenAi(request, roomy, pipeline,
                    new ChatOptions { Overheads = new ChatOverheads { PerMessage = 5, PerRequest = 2 } });
                Assert.Equal(12L, framed.InputTokens - none.InputTokens, "framing");
                var o = TokenEncoding.Get("o200k_base");
                Assert.Equal(o.Count("user") + o.Count("Hi.") + o.Count("assistant") + o.Count("Hello."), none.InputTokens,
                    "texts counted by the encoding");
                Assert.True(Chat.TrimOpenAi(request, roomy, pipeline).Selection.Report == null, "untraced by default");
                Assert.True(Chat.TrimOpenAi(request, roomy, pipeline, new ChatOptions { Encoding = "cl100k_base" }).InputTokens > 0,
                    "cl100k_base");

                Assert.True(Assert.Fails(Status.InvalidRequest, () => Chat.TrimOpenAi("{\"messages\": [", roomy, pipeline))
                    .LibraryMessage.Contains("$: malformed JSON"), "malformed JSON");
                Assert.True(Assert.Fails(Status.InvalidRequest, () => Chat.TrimAnthropic(Sample("openai"), roomy, pipeline))
                    .LibraryMessage.Contains("messages[0].role"), "the other format");
                Assert.Fails(Status.InvalidArgument, () => Chat.Trim((ChatFormat)9, request, roomy, pipeline), "format");
                Assert.Fails(Status.InvalidArgument, () => Chat.TrimOpenAi(request, roomy, pipeline, new ChatOptions { Encoding = "gpt2" }),
                    "encoding");
                Assert.Fails(Status.InvalidArgument, () => Chat.TrimOpenAi(request, roomy, pipeline,
                    new ChatOptions { Overheads = new ChatOverheads { Media = -1 } }), "negative overhead");
                Assert.Fails(Status.PinnedExceedsBudget, () => Chat.TrimOpenAi(Sample("openai"), small, pipeline), "pinned");
                Assert.Throws<ArgumentNullException>(() => Chat.TrimOpenAi(null, roomy, pipeline), "null request");
            }
        }
        /// A trim can carry a prefix state across turns: the same request trimmed again with
        /// the first turn's state gives the same request and reuses all of it; another
        /// conversation's state is refused; without Prefix there is no reuse report and no state.
        [Test]
        public static void PrefixStateAcrossTurns()
        {
            var request = Sample("openai");
            using (var pipeline = Pipeline.FromPreset("chat"))
            using (var budget = new Budget(6000, 4000))
            {
                var prefix = new PrefixOptions
                {
                    Conversation = System.Text.Encoding.UTF8.GetBytes("conversation-1"), CacheRule = "openai",
                };
                var first = Chat.TrimOpenAi(request, budget, pipeline, new ChatOptions { Prefix = prefix });
                using (first.State)
                {
                    Assert.True(first.Reuse != null && first.State != null, "reuse and state");
                    Assert.Equal(1UL, first.Reuse.Turn, "turn 1");
                    Assert.Equal(0, first.Reuse.PreviousEntries, "no previous window");
                    Assert.True(first.Json.Length < request.Length, "the budget trims the sample");
                    var second = Chat.TrimOpenAi(request, budget, pipeline,
                        new ChatOptions { Prefix = prefix, PreviousState = first.State });
                    using (second.State)
                    {
                        var u = second.Reuse;
                        Assert.Equal(first.Json, second.Json, "same request");
                        Assert.Equal(2UL, u.Turn, "turn 2");
                        Assert.True(u.Difference == null, "no difference");
                        Assert.Equal(u.WindowEntries, u.KeptEntries, "everything kept");
                        Assert.Equal(first.Reuse.WindowTokens, u.KeptTokens, "kept tokens");
                        Assert.True(u.Json.Contains("\"kept_entries\""), "reuse JSON");
                    }
                    var other = new PrefixOptions { Conversation = System.Text.Encoding.UTF8.GetBytes("conversation-2") };
                    Assert.Fails(Status.InvalidState, () => Chat.TrimOpenAi(request, budget, pipeline,
                        new ChatOptions { Prefix = other, PreviousState = first.State }), "another conversation");
                    Assert.True(Assert.Fails(Status.InvalidArgument, () => Chat.TrimOpenAi(request, budget, pipeline,
                        new ChatOptions { PreviousState = first.State })).LibraryMessage.Contains("previous_state"),
                        "a previous state without Prefix");
                    var plain = Chat.TrimOpenAi(request, budget, pipeline);
                    Assert.True(plain.Reuse == null && plain.State == null, "no prefix, no reuse");
                    Assert.Equal(first.Json, plain.Json, "same selection without a state");
                }
            }
        }
    }
}
