using System;
using System.Globalization;
using System.Linq;
using System.Text;

namespace Ctxpack.Tests
{
    /// ChatOptions.Shorten through the C ABI: a long tool output that does not fit is sent as
    /// its head and tail (ChatResult.Shortened lists it) instead of being dropped with its
    /// call, with the default or a custom marker; invalid settings are argument errors.
    static class ChatShortenTests
    {
        /// "w1 w2 … wn": n distinct words.
        static string NumberedWords(int n) => string.Join(" ", Enumerable.Range(1, n).Select(i => "w" + i));

        // An OpenAI request whose tool message (messages[2]) has a content string between
        // Before and After: a question, the call, the output, an answer and a follow-up. Its
        // messages are separated by "," alone, as a trimmed request's are (the first
        // separator is reused).
        const string Before = "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"check the logs\"}," +
            "{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\", " +
            "\"function\": {\"name\": \"logs\", \"arguments\": \"{}\"}}]}," +
            "{\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": ";
        const string After = "},{\"role\": \"assistant\", \"content\": \"the logs are fine\"}," +
            "{\"role\": \"user\", \"content\": \"thanks, and now?\"}]}";

        /// The request with output (plain words: nothing to escape) as the tool's content.
        static string ToolRequest(string output) => Before + "\"" + output + "\"" + After;

        /// The tool's content in a trimmed request: the output must be the request with only
        /// that string changed, which is decoded from JSON.
        static string ToolContent(string json)
        {
            Assert.True(json.StartsWith(Before + "\"", StringComparison.Ordinal) && json.EndsWith("\"" + After, StringComparison.Ordinal),
                "every byte around the tool's content is the request's: " + json);
            return JsonString(json.Substring(Before.Length + 1, json.Length - Before.Length - After.Length - 2));
        }

        /// Decodes the inside of a JSON string literal.
        static string JsonString(string escaped)
        {
            var s = new StringBuilder();
            for (int i = 0; i < escaped.Length; i++)
            {
                var c = escaped[i];
                Assert.True(c != '"' && c >= ' ', $"unescaped character {(int)c} in a JSON string");
                if (c != '\\')
                {
                    s.Append(c);
                    continue;
                }
                var e = escaped[++i];
                switch (e)
                {
                    case 'n': s.Append('\n'); break;
                    case 't': s.Append('\t'); break;
                    case 'r': s.Append('\r'); break;
                    case 'b': s.Append('\b'); break;
                    case 'f': s.Append('\f'); break;
                    case 'u':
                        s.Append((char)int.Parse(escaped.Substring(i + 1, 4), NumberStyles.HexNumber, CultureInfo.InvariantCulture));
                        i += 4;
                        break;
                    default:
                        Assert.True(e == '"' || e == '\\' || e == '/', $"escape \\{e}");
                        s.Append(e);
                        break;
                }
            }
            return s.ToString();
        }

        /// A budget with room for the request with a short tool output plus 60 tokens: too
        /// small for a 400-word output, enough for its 20+10-token head and tail.
        static long BudgetFor(Pipeline pipeline)
        {
            using (var roomy = new Budget(1000000, 1000000))
            {
                var small = Chat.TrimOpenAi(ToolRequest("ok"), roomy, pipeline).InputTokens;
                var whole = Chat.TrimOpenAi(ToolRequest(NumberedWords(400)), roomy, pipeline).InputTokens;
                Assert.True(whole > small + 260, $"the long output overflows the budget: {whole} tokens, budget {small + 60}");
                return small + 60;
            }
        }

        /// A long tool output that does not fit is dropped with its call; with Shorten the
        /// pair is kept and the output sent as its head (the encoding's 20-token prefix), the
        /// marker and a tail of at most 10 tokens, every other byte of the request unchanged.
        [Test]
        public static void ALongToolOutputIsSentAsItsHeadAndTail()
        {
            var original = NumberedWords(400);
            var request = ToolRequest(original);
            var shorten = new ChatOptions { Shorten = new ChatShorten { HeadTokens = 20, TailTokens = 10 } };
            using (var pipeline = Pipeline.FromPreset("chat"))
            {
                var max = BudgetFor(pipeline);
                using (var budget = new Budget(max, max))
                using (var roomy = new Budget(1000000, 1000000))
                {
                    var plain = Chat.TrimOpenAi(request, budget, pipeline);
                    Assert.Sequence(new[] { 0, 3, 4 }, plain.Kept, "without Shorten: kept");
                    Assert.Sequence(new[] { 1, 2 }, plain.Dropped, "without Shorten: dropped");
                    Assert.Equal(0, plain.Shortened.Count, "without Shorten: shortened");

                    var r = Chat.TrimOpenAi(request, budget, pipeline, shorten);
                    Assert.Sequence(new[] { 0, 1, 2, 3, 4 }, r.Kept, "kept");
                    Assert.Equal(0, r.Dropped.Count, "dropped");
                    Assert.Sequence(new[] { 2 }, r.Shortened, "shortened");
                    Assert.True(r.Tokens <= max && r.Tokens < r.InputTokens, $"{r.Tokens} tokens of {r.InputTokens}, budget {max}");
                    var text = ToolContent(r.Json);
                    Assert.True(text.StartsWith("w1 w2 w3 w4 w5 ", StringComparison.Ordinal) &&
                        text.EndsWith(" w399 w400", StringComparison.Ordinal) && text.Contains("tokens omitted") &&
                        text.Length < original.Length, "shortened content: " + text);
                    // The head is the encoding's 20-token prefix, the tail a suffix of at most 10
                    // tokens, and the marker counts the tokens between them.
                    var enc = TokenEncoding.Get("o200k_base");
                    var head = enc.Truncate(original, 20);
                    Assert.True(text.StartsWith(head + "\n[… ", StringComparison.Ordinal), $"head {head}, content {text}");
                    var rest = text.Substring(head.Length + "\n[… ".Length);
                    const string closing = " tokens omitted …]\n";
                    var end = rest.IndexOf(closing, StringComparison.Ordinal);
                    Assert.True(end > 0, "the default marker: " + rest);
                    var omitted = long.Parse(rest.Substring(0, end), CultureInfo.InvariantCulture);
                    var tail = rest.Substring(end + closing.Length);
                    var tailTokens = enc.Count(tail);
                    Assert.True(tail.Length > 0 && original.EndsWith(tail, StringComparison.Ordinal) && tailTokens <= 10,
                        $"tail {tail} ({tailTokens} tokens)");
                    Assert.Equal(enc.Count(original) - enc.Count(head) - tailTokens, omitted, "tokens omitted");

                    // With room for everything nothing is shortened: the request comes back as is.
                    var whole = Chat.TrimOpenAi(request, roomy, pipeline, shorten);
                    Assert.Equal(request, whole.Json, "everything fits");
                    Assert.Equal(0, whole.Shortened.Count, "everything fits: shortened");
                    // Both counts 0 is off, as a null Shorten is.
                    var off = Chat.TrimOpenAi(request, budget, pipeline, new ChatOptions { Shorten = new ChatShorten() });
                    Assert.Equal(plain.Json, off.Json, "zero counts: off");
                    Assert.Equal(0, off.Shortened.Count, "zero counts: shortened");
                }
            }
        }

        /// A custom marker is what separates head and tail, with {omitted} filled in.
        [Test]
        public static void ACustomMarkerSeparatesHeadAndTail()
        {
            var original = NumberedWords(400);
            using (var pipeline = Pipeline.FromPreset("chat"))
            using (var budget = new Budget(BudgetFor(pipeline), BudgetFor(pipeline)))
            {
                var r = Chat.TrimOpenAi(ToolRequest(original), budget, pipeline, new ChatOptions
                {
                    Shorten = new ChatShorten { HeadTokens = 20, TailTokens = 10, Quality = 0.5, Marker = " <<{omitted} cut>> " },
                });
                Assert.Sequence(new[] { 2 }, r.Shortened, "shortened");
                var text = ToolContent(r.Json);
                int start = text.IndexOf(" <<", StringComparison.Ordinal), end = text.IndexOf(" cut>> ", StringComparison.Ordinal);
                Assert.True(start > 0 && end > start && !text.Contains("tokens omitted") && text.EndsWith(" w400", StringComparison.Ordinal),
                    "content: " + text);
                Assert.True(int.TryParse(text.Substring(start + 3, end - start - 3), NumberStyles.None, CultureInfo.InvariantCulture,
                    out var n) && n > 0, "marker: " + text.Substring(start, end + 7 - start));
                Assert.True(original.StartsWith(text.Substring(0, start), StringComparison.Ordinal), "head");
                Assert.True(original.EndsWith(text.Substring(end + 7), StringComparison.Ordinal), "tail");
            }
        }

        /// A quality outside (0, 1], a negative count, and Shorten with Prefix are argument
        /// errors; the bounds of the quality are valid.
        [Test]
        public static void InvalidShortenSettingsAreArgumentErrors()
        {
            var request = ToolRequest(NumberedWords(400));
            using (var pipeline = Pipeline.FromPreset("chat"))
            using (var budget = new Budget(100000, 100000))
            {
                Func<ChatShorten, PrefixOptions, ChatResult> trim = (shorten, prefix) =>
                    Chat.TrimOpenAi(request, budget, pipeline, new ChatOptions { Shorten = shorten, Prefix = prefix });
                foreach (var q in new[] { 1.5, double.NaN, -0.25, double.PositiveInfinity })
                {
                    var e = Assert.Fails(Status.InvalidArgument,
                        () => trim(new ChatShorten { HeadTokens = 20, TailTokens = 10, Quality = q }, null), $"quality {q}");
                    Assert.True(e.LibraryMessage.Contains("shorten_quality"), e.Message);
                }
                foreach (var counts in new[] { (-1L, 10L), (20L, -3L) })
                {
                    var e = Assert.Fails(Status.InvalidArgument,
                        () => trim(new ChatShorten { HeadTokens = counts.Item1, TailTokens = counts.Item2 }, null), $"counts {counts}");
                    Assert.True(e.LibraryMessage.Contains("Shorten.HeadTokens and Shorten.TailTokens"), e.Message);
                }
                var withPrefix = Assert.Fails(Status.InvalidArgument,
                    () => trim(new ChatShorten { HeadTokens = 20, TailTokens = 10 }, new PrefixOptions()), "with Prefix");
                Assert.True(withPrefix.LibraryMessage.Contains("prefix"), withPrefix.Message);
                foreach (var q in new[] { 1.0, 0.001 })
                    Assert.Equal(0, trim(new ChatShorten { HeadTokens = 20, TailTokens = 10, Quality = q }, null).Dropped.Count,
                        $"quality {q}");
            }
        }
    }
}
