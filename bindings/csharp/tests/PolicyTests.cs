using System;
using System.Collections.Generic;
using System.Linq;

namespace Ctxpack.Tests
{
    static class PolicyTests
    {
        [Test]
        public static void Presets()
        {
            var want = new[] { "Chat", "CodeReview", "Rag", "DocumentQa", "ToolUse", "LongRunning", "Debugging" };
            Assert.Sequence(want, Pipeline.Presets, "presets");
            var items = new[] { Util.Day("a", 10, 0), Util.Day("b", 10, 1) };
            using (var budget = new Budget(100, 100))
            {
                foreach (var name in want.Concat(new[] { "code-review", "TOOL USE" }))
                {
                    using (var p = Pipeline.FromPreset(name)) p.Run(items, budget);
                }
            }
            Assert.Fails(Status.InvalidArgument, () => Pipeline.FromPreset("Poetry"), "unknown preset");
        }

        [Test]
        public static void PolicyJsonRoundTrip()
        {
            Pipeline original;
            using (var recency = Scorer.Recency())
            using (var kind = Scorer.Kind())
            using (var scorer = Scorer.Composite(recency.WithWeight(2), kind.WithWeight(1)))
            {
                original = Util.Pipeline(scorer, overflow: OverflowStrategy.Truncate);
            }
            using (original)
            {
                var text = original.ToPolicyJson();
                foreach (var want in new[] { "recency", "kind", "truncate" })
                    Assert.True(text.ToLowerInvariant().Contains(want), $"policy JSON lacks {want}: {text}");
                Assert.True(original.ToPolicyJson(pretty: true).Contains("\n  "), "pretty JSON is indented");
                using (var rebuilt = Pipeline.FromPolicyJson(text))
                using (var budget = new Budget(70, 70))
                {
                    Assert.Equal(text, rebuilt.ToPolicyJson(), "round trip");
                    var items = new[] { Util.Day("a", 30, 0), new ContextItem("m", 30) { Kind = "Memory" }, Util.Day("b", 30, 2) };
                    Assert.Sequence(original.Run(items, budget).Indices, rebuilt.Run(items, budget).Indices, "same selection");
                }
            }
        }

        [Test]
        public static void PolicyJsonErrors()
        {
            var e = Assert.Fails(Status.InvalidPolicy, () => Pipeline.FromPolicyJson(@"{""scorers"": [{""type"": ""recency"", ""weight"": -1}]}"));
            Assert.True(e.LibraryMessage.Contains("scorers[0].weight"), e.LibraryMessage);
            // A value a component rejects keeps the component's status.
            Assert.Fails(Status.ScorerConfig, () => Pipeline.FromPolicyJson(
                @"{""scorers"": [{""type"": ""kind"", ""weight"": 1, ""kindWeights"": {""Message"": -1}}]}"));
            using (var custom = Scorer.Custom(items => items.Select(i => 0.5).ToArray()))
            using (var p = Util.Pipeline(custom))
            {
                e = Assert.Fails(Status.InvalidPolicy, () => p.ToPolicyJson());
                Assert.True(e.LibraryMessage.Contains("custom"), e.LibraryMessage);
            }
        }

        [Test]
        public static void DryRunAndAnalytics()
        {
            var items = new[]
            {
                new ContextItem("sys", 10) { Kind = "SystemPrompt", Pinned = true },
                Util.Day("t1", 20, 1), Util.Day("t2", 20, 2), Util.Day("m", 20, 3),
            };
            items[1].Kind = items[2].Kind = "ToolOutput";
            using (var inner = Slicer.Greedy())
            using (var slicer = Slicer.CountQuota(inner, Scarcity.Degrade, new CountQuotaEntry("ToolOutput", 1, 2)))
            using (var recency = Scorer.Recency())
            using (var placer = Placer.Chronological())
            using (var p = new Pipeline(recency, slicer, placer))
            using (var budget = new Budget(100, 60))
            {
                var dry = p.DryRun(items, budget);
                var traced = p.Run(items, budget, TraceDetail.Item);
                Assert.Sequence(traced.Indices, dry.Indices, "dry run = traced run");
                Assert.True(dry.Report != null && dry.Report.Json.Length > 0, "dry run report");
                // sys (10) + m (20) + t2 (20) = 50 of max 100; kinds SystemPrompt, Message, ToolOutput; 2 of 3 timestamped.
                Assert.Sequence(new[] { 2, 3, 0 }, dry.Indices, "indices");
                var an = dry.Report.Analytics;
                Assert.Equal(0.5, an.BudgetUtilization, "budget utilization");
                Assert.Equal(3, an.KindDiversity, "kind diversity");
                Assert.Near(2 / 3.0, an.TimestampCoverage, "timestamp coverage");
                var q = an.QuotaUtilization.Single();
                Assert.True(q.Kind == "ToolOutput" && q.Mode == QuotaMode.Count && q.Require == 1 && q.Cap == 2 && q.Actual == 1 && q.Utilization == 0.5,
                    $"quota utilization {q.Kind} {q.Mode} {q.Require} {q.Cap} {q.Actual} {q.Utilization}");
            }
        }

        [Test]
        public static void BudgetSimulation()
        {
            var items = new[] { Util.Day("old", 30, 0), Util.Day("mid", 30, 1), Util.Day("new", 30, 2) };
            using (var recency = Scorer.Recency())
            using (var p = Util.Pipeline(recency))
            using (var budget = new Budget(90, 90))
            {
                // Under 90 tokens all three fit; 30 fewer and the oldest (lowest score) drops out.
                Assert.Sequence(new[] { 0 }, p.MarginalItems(items, budget, 30), "marginal items");
                Assert.Equal((long?)90, p.MinBudgetFor(items, 0, 200), "min budget for the oldest");
                Assert.Equal((long?)null, p.MinBudgetFor(items, 0, 80), "min budget under a low ceiling");
                Assert.Fails(Status.InvalidArgument, () => p.MinBudgetFor(items, 7, 200), "target out of range");
            }
        }

        [Test]
        public static void SensitivityComparison()
        {
            var items = new[] { Util.Day("old", 30, 0), Util.Day("new", 30, 1) };
            items[0].Priority = 9;
            items[1].Priority = 1;
            using (var recency = Scorer.Recency())
            using (var priority = Scorer.Priority())
            using (var byRecency = Util.Pipeline(recency))
            using (var byPriority = Util.Pipeline(priority))
            using (var budget = new Budget(30, 30))
            {
                var s = Sensitivity.Compare(items, budget, new SensitivityVariant("recency", byRecency), new SensitivityVariant("priority", byPriority));
                Assert.Sequence(new[] { "recency", "priority" }, s.Labels, "labels");
                Assert.Sequence(new[] { 1 }, s.Results[0].Indices, "recency selects");
                Assert.Sequence(new[] { 0 }, s.Results[1].Indices, "priority selects");
                Assert.Equal(2, s.Swings.Count, "swings");
                Assert.True(s.Swings[0].Index == 0 && s.Swings[0].Statuses.SequenceEqual(new[] { ItemStatus.Excluded, ItemStatus.Included }), "swing 0");
                Assert.True(s.Swings[1].Index == 1 && s.Swings[1].Statuses.SequenceEqual(new[] { ItemStatus.Included, ItemStatus.Excluded }), "swing 1");
                Assert.Fails(Status.InvalidArgument, () => Sensitivity.Compare(items, budget, new SensitivityVariant("one", byRecency)), "one variant");
            }
        }
    }
}
