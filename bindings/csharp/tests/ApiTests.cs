using System;
using System.Collections.Generic;
using System.Linq;

namespace Ctxpack.Tests
{
    static class ApiTests
    {
        [Test]
        public static void VersionIsSemantic()
        {
            Assert.True(System.Text.RegularExpressions.Regex.IsMatch(Library.Version, @"^\d+\.\d+\.\d+$"), Library.Version);
            var parts = Library.Version.Split('.');
            Assert.Equal(uint.Parse(parts[0]) * 10000 + uint.Parse(parts[1]) * 100 + uint.Parse(parts[2]), Library.VersionNumber,
                "version number");
        }

        /// Reserved slots shrink the room of every kind: slots that can never be honoured
        /// are refused when the budget is built.
        [Test]
        public static void BudgetRejectsSlotsThatCannotFit()
        {
            using (new Budget(1000, 500, 100, new Dictionary<string, long> { ["Memory"] = 50 }, 10)) { }
            Assert.Fails(Status.InvalidBudget,
                () => new Budget(1000, 500, 0, new Dictionary<string, long> { ["Memory"] = 400, ["Tool"] = 200 }),
                "slots above the target");
        }

        /// Each built-in scorer, run alone over the same items (Scorer.Score).
        [Test]
        public static void BuiltInScorers()
        {
            var now = Util.Jan2024.AddDays(10);
            var items = new[]
            {
                new ContextItem("a", 1) { Kind = "SystemPrompt", Priority = 1, Tags = { "x" }, Timestamp = Util.Jan2024,
                    Metadata = { ["cupel:trust"] = "0.9", ["team"] = "red" }, FutureRelevanceHint = 2 },
                new ContextItem("b", 1) { Kind = "Document", Priority = 5, Tags = { "x", "y" }, Timestamp = Util.Jan2024.AddDays(5), FutureRelevanceHint = 0.25 },
                new ContextItem("c", 1) { Tags = { "z" }, Metadata = { ["team"] = "blue" } },
            };
            Action<string, Scorer, double[]> check = (name, scorer, want) =>
            {
                using (scorer) Assert.Near(want, scorer.Score(items), name);
            };
            var kindWeights = new Dictionary<string, double> { ["Document"] = 1, ["Message"] = 0.5 };
            check("recency", Scorer.Recency(), new[] { 0, 1, 0.0 });
            check("priority", Scorer.Priority(), new[] { 0, 1, 0.0 });
            check("kind", Scorer.Kind(), new[] { 1, 0.4, 0.2 });
            check("kind weights", Scorer.Kind(kindWeights), new[] { 0, 1, 0.5 });
            // Matched weight over the total weight (1.5).
            check("tag", Scorer.Tag(new Dictionary<string, double> { ["x"] = 1, ["z"] = 0.5 }), new[] { 2 / 3.0, 2 / 3.0, 1 / 3.0 });
            check("frequency", Scorer.Frequency(), new[] { 0.5, 0.5, 0 });
            check("reflexive", Scorer.Reflexive(), new[] { 1, 0.25, 0 });
            check("metadata trust", Scorer.MetadataTrust(0.3), new[] { 0.9, 0.3, 0.3 });
            check("metadata key", Scorer.MetadataKey("team", "blue", 2), new[] { 1, 1, 2.0 });
            using (var kind = Scorer.Kind(kindWeights)) check("scaled", Scorer.Scaled(kind), new[] { 0, 1, 0.5 });
            check("decay window", Scorer.Decay(DecayCurve.Window(TimeSpan.FromDays(7)), now), new[] { 0, 1, 0.5 });
            check("decay exponential", Scorer.Decay(DecayCurve.Exponential(TimeSpan.FromDays(5)), now, 0.1), new[] { 0.25, 0.5, 0.1 });
            check("decay step", Scorer.Decay(DecayCurve.Step(new DecayWindow(TimeSpan.FromDays(6), 0.9),
                new DecayWindow(TimeSpan.FromDays(30), 0.4)), now), new[] { 0.4, 0.9, 0.5 });
        }

        [Test]
        public static void BuiltInSlicersAndPlacers()
        {
            var items = new[]
            {
                new ContextItem("m1", 40) { Kind = "Message" }, new ContextItem("d1", 50) { Kind = "Document" },
                new ContextItem("m2", 30) { Kind = "Message" }, new ContextItem("t1", 20) { Kind = "ToolOutput" },
            };
            var scores = new[] { 0.9, 0.8, 0.7, 0.1 };
            using (var budget = new Budget(100, 100))
            using (var greedy = Slicer.Greedy())
            {
                Func<string, Slicer, string[], SliceResult> check = (name, slicer, want) =>
                {
                    using (slicer)
                    {
                        var r = slicer.Slice(items, scores, budget);
                        Assert.Sequence(want.OrderBy(x => x), r.Selected.Select(i => items[i].Content).OrderBy(x => x), name);
                        return r;
                    }
                };
                // Densities: m2 .0233, m1 .0225, d1 .016, t1 .005 (spec 04).
                check("greedy", Slicer.Greedy(), new[] { "m2", "m1", "t1" }); // d1 no longer fits
                check("knapsack", Slicer.Knapsack(10), new[] { "d1", "m1" }); // value 1.7
                // Shares of the 100 tokens by mass: Document 35, Message min(50, cap 40), ToolOutput 14.
                check("quota", Slicer.Quota(greedy, new QuotaEntry("Message", 0, 40)), new[] { "m2" });
                var countQuota = check("count quota", Slicer.CountQuota(greedy, Scarcity.Degrade,
                    new CountQuotaEntry("ToolOutput", 1, 1), new CountQuotaEntry("Memory", 1, 2)), new[] { "t1", "m2", "m1" });
                Assert.Sequence(new[] { new Shortfall("Memory", 1, 0) }, countQuota.Shortfalls, "shortfalls");
                check("count-constrained knapsack", Slicer.CountConstrainedKnapsack(Scarcity.Degrade,
                    new[] { new CountQuotaEntry("Message", 0, 1) }, bucketSize: 10), new[] { "d1", "m1" }); // at most one Message
            }
            var timed = new[] { Util.Day("c", 1, 3), Util.Day("a", 1, 1), new ContextItem("none", 1), Util.Day("b", 1, 2) };
            using (var chrono = Placer.Chronological())
            using (var ushaped = Placer.UShaped())
            {
                Assert.Sequence(new[] { 1, 3, 0, 2 }, chrono.Place(timed, new[] { 1.0, 1, 1, 1 }), "chronological");
                Assert.Sequence(new[] { 1, 2, 0, 3 }, ushaped.Place(timed, new[] { 0.1, 0.9, 0.5, 0.7 }), "u-shaped");
            }
        }

        [Test]
        public static void Report()
        {
            var items = new[]
            {
                new ContextItem("sys", 10) { Kind = "SystemPrompt", Pinned = true },
                Util.Day("old", 30, 0), Util.Day("dup", 10, 1), Util.Day("dup", 10, 2), Util.Day("new", 30, 3),
                new ContextItem("neg", -1), new ContextItem("zero", 0),
            };
            var res = Util.RunRecency(items, 100, 60, trace: TraceDetail.Item);
            var r = res.Report;
            Assert.Equal(items.Length, r.TotalCandidates, "total candidates");
            Assert.Equal(89L, r.TotalTokensConsidered, "total tokens");
            Assert.Sequence(res.Indices, r.Included.Select(e => e.Index), "included indices");
            Assert.Sequence(res.Scores, r.Included.Select(e => e.Score), "included scores");
            Assert.Sequence(res.Reasons, r.Included.Select(e => e.Reason), "included reasons");
            var byContent = r.Excluded.ToDictionary(e => items[e.Index].Content);
            Assert.True(byContent["neg"].Reason == ExclusionReason.NegativeTokens && byContent["neg"].Name == "NegativeTokens" && byContent["neg"].Tokens == -1, "neg");
            Assert.True(byContent["dup"].Reason == ExclusionReason.Deduplicated && byContent["dup"].DeduplicatedAgainst == "dup" && byContent["dup"].Index == 2, "dup");
            Assert.True(byContent["old"].Reason == ExclusionReason.BudgetExceeded && byContent["old"].ItemTokens == 30, "old");
            Assert.Equal(5, r.Events.Select(e => e.Stage).Distinct().Count(), "stages with events");
            Assert.True(r.Events.Any(e => e.ItemIndex != null), "item events");
            Assert.True(r.Json.StartsWith("{") && r.Json.Contains("NegativeTokens"), r.Json);
            Assert.True(Util.RunRecency(items, 100, 60).Report == null, "an untraced run has a report");
        }

        [Test]
        public static void OverflowProceed()
        {
            var items = new[] { new ContextItem("p", 80) { Pinned = true }, Util.Day("a", 10, 0) };
            var r = Util.RunRecency(items, 100, 50, OverflowStrategy.Proceed);
            Assert.True(r.Overflow != null, "overflow event");
            Assert.Equal(30L, r.Overflow.TokensOverBudget, "tokens over budget");
            Assert.Sequence(new[] { 0 }, r.Overflow.Items, "overflow items");
            Assert.True(Util.RunRecency(items, 100, 50, OverflowStrategy.Truncate).Overflow == null, "truncate reports no event");
        }

        [Test]
        public static void BudgetOptions()
        {
            var items = new[] { Util.Day("a", 300, 0), Util.Day("b", 150, 1) };
            // Effective target: min(500, 1000-100) - 50 reserved = 450, less the 10% margin = 405.
            // b (the more recent) takes 150; a (300) would fit 450 but not 405.
            using (var recency = Scorer.Recency())
            using (var p = Util.Pipeline(recency))
            using (var b = new Budget(1000, 500, outputReserve: 100,
                reservedSlots: new Dictionary<string, long> { ["Memory"] = 50 }, safetyMarginPercent: 10))
            {
                Assert.Sequence(new[] { 1 }, p.Run(items, b).Indices, "indices");
            }
            Assert.Fails(Status.InvalidBudget, () => new Budget(100, 50, reservedSlots: new[]
            {
                new KeyValuePair<string, long>("Memory", 1), new KeyValuePair<string, long>("memory", 1),
            }), "duplicate slot kinds");
        }

        [Test]
        public static void ItemListPushIsAllOrNothing()
        {
            using (var list = new ItemList(new[] { Util.Day("a", 1, 0) }))
            {
                var e = Assert.Fails(Status.EmptyContent, () => list.Push(Util.Day("b", 1, 1), new ContextItem("", 1), Util.Day("c", 1, 2)));
                Assert.True(e.LibraryMessage.StartsWith("item 1:"), e.LibraryMessage);
                Assert.Equal(1, list.Count, "length after a failed push");
                list.Push(Util.Day("b", 1, 1));
                using (var s = Scorer.Recency())
                using (var p = Util.Pipeline(s))
                using (var b = new Budget(10, 10))
                {
                    Assert.Sequence(new[] { 0, 1 }, p.Run(list, b).Indices, "indices");
                }
                list.Clear();
                Assert.Equal(0, list.Count, "length after clear");
                list.Dispose();
                Assert.Throws<ObjectDisposedException>(() => list.Push(Util.Day("c", 1, 2)), "push after dispose");
            }
        }

        [Test]
        public static void LoneSurrogatesAreRejectedBeforeTheCall() =>
            Assert.Throws<ArgumentException>(() => new ItemList(new[] { new ContextItem("bad \ud800", 1) }));
    }
}
