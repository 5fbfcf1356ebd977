using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;

namespace Ctxpack.Tests
{
    static class PolicyJsonTests
    {
        const string PolicyWithTypo = @"{""scorers"": [{""type"": ""recency"", ""weight"": 1, ""wieght"": 2}], ""futureOption"": true}";

        [Test]
        public static void LenientReadReturnsWarnings()
        {
            using (var p = Pipeline.FromPolicyJson(PolicyWithTypo, new JsonReadOptions(), out var warnings))
            using (var budget = new Budget(10, 10))
            {
                Assert.Sequence(new[] { JsonWarningKind.UnknownProperty, JsonWarningKind.UnknownProperty }, warnings.Select(w => w.Kind), "kinds");
                Assert.Sequence(new[] { "futureOption", "scorers[0].wieght" }, warnings.Select(w => w.Path), "paths");
                Assert.Sequence(new[] { "unknown property; ignored", "unknown property; ignored" }, warnings.Select(w => w.Message), "messages");
                Assert.Sequence(new[] { "futureOption: unknown property; ignored", "scorers[0].wieght: unknown property; ignored" },
                    warnings.Select(w => w.ToString()), "texts");
                Assert.Equal(warnings[1].Text, warnings[1].ToString(), "ToString");
                Assert.Equal(1, p.Run(new[] { Util.Day("a", 1, 0) }, budget).Indices.Count, "selected");
            }
            // Null options read leniently; a clean document has no warning even strictly.
            using (Pipeline.FromPolicyJson(PolicyWithTypo, null, out var lenient)) Assert.Equal(2, lenient.Count, "warnings");
            using (Pipeline.FromPolicyJson(@"{""scorers"": [{""type"": ""recency"", ""weight"": 1}]}", new JsonReadOptions { Strict = true }, out var none))
                Assert.Equal(0, none.Count, "warnings of a clean document");
        }

        [Test]
        public static void StrictReadFails()
        {
            var e = Assert.Fails(Status.InvalidPolicy, () => Pipeline.FromPolicyJson(PolicyWithTypo, new JsonReadOptions { Strict = true }, out _));
            Assert.True(e.LibraryMessage.Contains("futureOption: unknown property"), e.LibraryMessage);
        }

        [Test]
        public static void DotNetReadingRules()
        {
            const string doc = @"{""scorers"": [{""weight"": 1}, {""type"": ""kind"", ""weight"": 1, ""kindWeights"": {""Message"": 1, ""message"": 2}}]}";
            using (var p = Pipeline.FromPolicyJson(doc, null, out var warnings))
            {
                Assert.Sequence(new[] { JsonWarningKind.MissingScorerType, JsonWarningKind.RepeatedKind }, warnings.Select(w => w.Kind), "kinds");
                Assert.Sequence(new[] { "scorers[0].type", "scorers[1].kindWeights.message" }, warnings.Select(w => w.Path), "paths");
                var text = p.ToPolicyJson();
                Assert.True(text.Contains(@"{""type"":""recency"",""weight"":1}") && text.Contains(@"""kindWeights"":{""Message"":2}"), text);
            }
            var e = Assert.Fails(Status.InvalidPolicy, () => Pipeline.FromPolicyJson(doc, new JsonReadOptions { Strict = true }, out _));
            Assert.True(e.LibraryMessage.Contains("scorers[0].type: is required"), e.LibraryMessage);
        }

        [Test]
        public static void RegistryRunsHostScorer()
        {
            int calls = 0;
            using (var registry = new ScorerRegistry())
            {
                registry.Register("semanticSimilarity", items =>
                {
                    Interlocked.Increment(ref calls);
                    return items.Select(i => i.Content.Length / 100.0).ToArray();
                });
                using (var fresh = Scorer.Recency()) registry.Register("freshness", fresh);
                Assert.Sequence(new[] { "semanticSimilarity", "freshness" }, registry.Names, "names");
                // Names compare case-insensitively.
                const string doc = @"{""scorers"": [{""type"": ""SEMANTICSIMILARITY"", ""weight"": 1}]}";
                var options = new JsonReadOptions { Strict = true, Registry = registry };
                using (var p = Pipeline.FromPolicyJson(doc, options, out var warnings))
                using (var budget = new Budget(20, 20))
                {
                    Assert.Equal(0, warnings.Count, "warnings");
                    var items = new[] { Util.Day("short", 10, 2), Util.Day("a much longer one", 10, 0), Util.Day("middling", 10, 1) };
                    var r = p.Run(items, budget);
                    Assert.True(calls > 0, "the host scorer was not called");
                    // The two longest contents fit, placed chronologically, with the host's scores.
                    Assert.Sequence(new[] { 1, 2 }, r.Indices, "indices");
                    Assert.Near(new[] { 0.17, 0.08 }, r.Scores);
                }
                var e = Assert.Fails(Status.InvalidPolicy, () => Pipeline.FromPolicyJson(doc, null, out _), "without the registry");
                Assert.True(!e.LibraryMessage.Contains("registered:"), e.LibraryMessage);
                e = Assert.Fails(Status.InvalidPolicy, () => Pipeline.FromPolicyJson(@"{""scorers"": [{""type"": ""vibes"", ""weight"": 1}]}", options, out _));
                Assert.True(e.LibraryMessage.Contains("\"vibes\"") && e.LibraryMessage.Contains("registered: semanticSimilarity, freshness"), e.LibraryMessage);
            }
        }

        [Test]
        public static void RegistryRejectsBadNames()
        {
            using (var registry = new ScorerRegistry())
            using (var recency = Scorer.Recency())
            {
                foreach (var name in new[] { "", "  ", "recency", "MetadataKey" })
                    Assert.Fails(Status.InvalidArgument, () => registry.Register(name, recency), $"name \"{name}\"");
                Assert.Throws<ArgumentNullException>(() => registry.Register("x", (Scorer)null));
                Assert.Throws<ArgumentNullException>(() => registry.Register("x", (ScoreFunction)null));
                Assert.Equal(0, registry.Names.Count, "names");
            }
        }

        /// A registered view scorer scores what the copying one does.
        [Test]
        public static void RegisteredViewScorer()
        {
            using (var registry = new ScorerRegistry())
            {
                Assert.Throws<ArgumentNullException>(() => registry.RegisterViews("x", null));
                registry.RegisterViews("byLength", views => views.Select(v => v.ContentByteCount / 100.0).ToArray());
                var options = new JsonReadOptions { Registry = registry };
                using (var p = Pipeline.FromPolicyJson(@"{""scorers"": [{""type"": ""byLength"", ""weight"": 1}]}", options, out var _))
                using (var budget = new Budget(20, 20))
                {
                    var items = new[] { Util.Day("short", 10, 2), Util.Day("a much longer one", 10, 0), Util.Day("middling", 10, 1) };
                    var r = p.Run(items, budget);
                    Assert.Sequence(new[] { 1, 2 }, r.Indices, "indices");
                    Assert.Near(new[] { 0.17, 0.08 }, r.Scores);
                }
            }
        }

        /// The delegate lives while the registry or a pipeline built from a policy naming it
        /// holds the scorer, and is released when the last of them is disposed.
        [Test]
        public static void RegisteredDelegateLifetime()
        {
            var live = Callbacks.Live;
            var registry = new ScorerRegistry();
            registry.Register("host", items => items.Select(i => 0.5).ToArray());
            var p = Pipeline.FromPolicyJson(@"{""scorers"": [{""type"": ""host"", ""weight"": 1}]}", new JsonReadOptions { Registry = registry }, out _);
            registry.Dispose();
            Assert.Equal(live + 1, Callbacks.Live, "live callbacks after disposing the registry");
            using (var b = new Budget(10, 10)) Assert.Near(new[] { 0.5 }, p.Run(new[] { Util.Day("a", 1, 0) }, b).Scores);
            p.Dispose();
            Assert.Equal(live, Callbacks.Live, "live callbacks after disposing the pipeline");
        }

        // The first budget of .NET's round-trip tests, as .NET writes it.
        const string DotNetBudget = @"{""maxTokens"":8000,""targetTokens"":6000,""outputReserve"":1000,""reservedSlots"":{""Message"":100,""SystemPrompt"":200},""estimationSafetyMarginPercent"":10}";
        const string DotNetBudgetIndented = "{\n  \"maxTokens\": 8000,\n  \"targetTokens\": 6000,\n  \"outputReserve\": 1000,\n" +
            "  \"reservedSlots\": {\n    \"Message\": 100,\n    \"SystemPrompt\": 200\n  },\n  \"estimationSafetyMarginPercent\": 10\n}";

        [Test]
        public static void BudgetJsonRoundTrip()
        {
            var slots = new[] { new KeyValuePair<string, long>("Message", 100), new KeyValuePair<string, long>("SystemPrompt", 200) };
            using (var b = new Budget(8000, 6000, 1000, slots, 10))
            {
                Assert.Equal(DotNetBudget, b.ToJson(), "compact");
                Assert.Equal(DotNetBudgetIndented, b.ToJson(pretty: true), "indented");
            }
            foreach (var text in new[] { DotNetBudget, DotNetBudgetIndented })
            {
                using (var b = Budget.FromJson(text, new JsonReadOptions { Strict = true }, out var warnings))
                {
                    Assert.Equal(0, warnings.Count, "warnings");
                    Assert.Equal(DotNetBudget, b.ToJson(), "round trip");
                    Assert.Equal(DotNetBudgetIndented, b.ToJson(true), "round trip indented");
                }
            }
            // A budget read from JSON runs like one built in C#.
            var items = new[] { Util.Day("a", 10, 0), Util.Day("b", 10, 1), Util.Day("c", 10, 2) };
            using (var recency = Scorer.Recency())
            using (var p = Util.Pipeline(recency))
            using (var read = Budget.FromJson(@"{""maxTokens"": 20, ""targetTokens"": 20}"))
            using (var built = new Budget(20, 20))
            {
                Assert.Sequence(p.Run(items, built).Indices, p.Run(items, read).Indices, "same selection");
            }
        }

        [Test]
        public static void BudgetJsonWarningsAndErrors()
        {
            using (var b = Budget.FromJson(@"{""maxTokens"": 100, ""reservedSlots"": {""Memory"": 5, ""memory"": 0}, ""x"": 1}", null, out var warnings))
            {
                var kinds = new HashSet<JsonWarningKind>(warnings.Select(w => w.Kind));
                Assert.True(warnings.Count == 3 && kinds.SetEquals(new[] { JsonWarningKind.UnknownProperty, JsonWarningKind.MissingBudgetField, JsonWarningKind.RepeatedKind }),
                    string.Join("; ", warnings));
                Assert.Equal(@"{""maxTokens"":100,""targetTokens"":0,""outputReserve"":0,""reservedSlots"":{""Memory"":0},""estimationSafetyMarginPercent"":0}", b.ToJson(), "read as");
            }
            var cases = new Dictionary<string, string>
            {
                [@"{""maxTokens"": 1000, ""targetTokens"": 2000}"] = "targetTokens: 2000 cannot exceed maxTokens (1000)",
                [@"{""maxTokens"": 10, ""targetTokens"": 5, ""x"": 1}"] = "x: unknown property",
                [@"{""maxTokens"": 10}"] = "targetTokens: is required",
                [@"{""maxTokens"": "] = "$: malformed JSON",
            };
            foreach (var c in cases)
            {
                var e = Assert.Fails(Status.InvalidBudget, () => Budget.FromJson(c.Key, new JsonReadOptions { Strict = true }, out _), c.Key);
                Assert.True(e.LibraryMessage.Contains(c.Value), $"{c.Key}: {e.LibraryMessage}");
            }
        }
    }
}
