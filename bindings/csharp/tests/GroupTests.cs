using System;
using System.Collections.Generic;
using System.Linq;

namespace Ctxpack.Tests
{
    /// Item groups and library-counted items (docs/groups.md, docs/tokenizer.md). The group
    /// vectors of tests/vectors/groups also run, in ConformanceVectors.
    static class GroupTests
    {
        const string Call = "call get_weather(Oslo)";
        const string Result = "result: 4 C, rain";

        /// A tool call and its result (group "c1" when grouped) and two messages, scored by
        /// their hints: alone, the call is the densest item and its result the least dense.
        static ContextItem[] ToolChat(bool grouped)
        {
            var g = grouped ? "c1" : null;
            return new[]
            {
                new ContextItem(Call, 10) { FutureRelevanceHint = 0.9, Group = g },
                new ContextItem(Result, 50) { FutureRelevanceHint = 0.1, Group = g },
                new ContextItem("message A", 20) { FutureRelevanceHint = 0.5 },
                new ContextItem("message B", 20) { FutureRelevanceHint = 0.4 },
            };
        }

        [Test]
        public static void GroupsAreAllOrNothingWithTheirReport()
        {
            using (var p = Util.Pipeline(Scorer.Reflexive()))
            using (var b = new Budget(100, 60))
            {
                var plain = p.Run(ToolChat(false), b).Indices;
                Assert.True(plain.Contains(0) && !plain.Contains(1), "without the group the call is kept alone");
                var r = p.Run(ToolChat(true), b, TraceDetail.Item);
                Assert.True(!r.Indices.Contains(0) && !r.Indices.Contains(1), "the group is not split");
                var excluded = r.Report.Excluded;
                Assert.Equal(2, excluded.Count, "excluded");
                var lead = excluded.Single(e => e.Reason != ExclusionReason.GroupExcluded);
                var other = excluded.Single(e => e.Reason == ExclusionReason.GroupExcluded);
                Assert.Equal(ExclusionReason.BudgetExceeded, lead.Reason, "the lead's reason");
                Assert.Equal("GroupExcluded", other.Name, "name");
                Assert.Equal("c1", other.Group, "group");
                Assert.Equal(lead.Index, other.MemberIndex, "member index");
                Assert.Equal(lead.Index == 0 ? Call : Result, other.MemberContent, "member content");
                Assert.Equal("BudgetExceeded", other.MemberReason, "member reason");

                Assert.Equal(1, r.Report.Groups.Count, "groups");
                var g = r.Report.Groups[0];
                Assert.Equal("c1", g.Key, "key");
                Assert.Sequence(new[] { 0, 1 }, g.Members, "members");
                Assert.Equal(60L, g.Tokens, "tokens");
                Assert.Equal(GroupDecision.Excluded, g.Decision, "decision");
                Assert.Equal(PipelineStage.Slice, g.Stage, "stage");
                Assert.Equal(lead.Index, g.MemberIndex, "group member index");
                Assert.True(g.Value.HasValue && g.PinnedBy == null && !g.PartialSelection, "value, pinned_by, partial");
                Assert.True(r.Report.Json.Contains("\"groups\":[{\"key\":\"c1\",\"members\":[0,1],\"tokens\":60"), r.Report.Json);

                using (var roomy = new Budget(100, 100))
                {
                    var all = p.Run(ToolChat(true), roomy).Indices.ToList();
                    var at = all.IndexOf(0);
                    Assert.True(all.Count == 4 && at >= 0 && at + 1 < all.Count && all[at + 1] == 1, "members adjacent, in order");
                }
            }
        }

        [Test]
        public static void GroupValueAndPinnedFirst()
        {
            var items = new[]
            {
                new ContextItem("member one", 10) { FutureRelevanceHint = 0.5, Group = "g" },
                new ContextItem("member two", 10) { FutureRelevanceHint = 0.5, Group = "g" },
                new ContextItem("single", 20) { FutureRelevanceHint = 0.8 },
            };
            using (var b = new Budget(20, 20))
            using (var knapsack = Slicer.Knapsack(1))
            using (var placer = Placer.Chronological())
            using (var scorer = Scorer.Reflexive())
            {
                using (var sum = new Pipeline(scorer, knapsack, placer))
                using (var max = new Pipeline(scorer, knapsack, placer, groupValue: GroupValue.Max))
                {
                    Assert.Sequence(new[] { 0, 1 }, sum.Run(items, b).Indices.OrderBy(i => i), "sum");
                    Assert.Sequence(new[] { 2 }, max.Run(items, b).Indices, "max");
                }
                var scores = new[] { 0.5, 0.5, 0.8 };
                Assert.Sequence(new[] { 2 }, knapsack.Slice(items, scores, b, GroupValue.Max).Selected, "slice alone, max");
                Assert.Equal(2, knapsack.Slice(items, scores, b).Selected.Count, "slice alone, sum");
                Assert.Fails(Status.InvalidArgument, () => new Pipeline(scorer, knapsack, placer, groupValue: (GroupValue)7), "group value 7");

                var early = Util.Day("early", 1, 1);
                var late = Util.Day("late", 1, 3);
                early.Group = late.Group = "g";
                Assert.Sequence(new[] { 0, 2, 1 }, placer.Place(new[] { early, Util.Day("between", 1, 2), late }, scores, GroupValue.Mean),
                    "place alone");
            }

            var chat = new[] { new ContextItem("You are a helpful assistant.", 5) { Pinned = true }, Util.Day("hi", 2, 1), Util.Day("hello!", 2, 2) };
            using (var b = new Budget(100, 100))
            using (var slicer = Slicer.Greedy())
            using (var placer = Placer.Chronological())
            using (var recency = Scorer.Recency())
            using (var spec = new Pipeline(recency, slicer, placer))
            using (var first = new Pipeline(recency, slicer, placer, pinnedFirst: true))
            {
                Assert.Sequence(new[] { 1, 2, 0 }, spec.Run(chat, b).Indices, "default placement");
                Assert.Sequence(new[] { 0, 1, 2 }, first.Run(chat, b).Indices, "pinned first");
            }
        }

        /// The counts are the ones OpenAI documents for cl100k_base.
        [Test]
        public static void ItemsCountedByAnEncoding()
        {
            var items = new[]
            {
                new ContextItem("hello world", 0) { Encoding = "cl100k_base" },
                new ContextItem("tiktoken is great!", 0) { Encoding = "CL100K_BASE" },
            };
            var r = Util.RunRecency(items, 100, 0, trace: TraceDetail.Stage);
            Assert.Equal(8L, r.Report.TotalTokensConsidered, "total");
            foreach (var e in r.Report.Excluded)
            {
                Assert.Equal(ExclusionReason.BudgetExceeded, e.Reason, "reason");
                Assert.Equal(e.Index == 0 ? 2L : 6L, e.ItemTokens, $"tokens of item {e.Index}");
            }
            var unknown = Assert.Fails(Status.InvalidArgument, () => new ItemList(new[] { new ContextItem("x", 0) { Encoding = "p50k_base" } }));
            Assert.True(unknown.Message.Contains("unknown encoding \"p50k_base\""), unknown.Message);
            Assert.Fails(Status.InvalidArgument, () => new ItemList(new[] { new ContextItem("x", 3) { Encoding = "o200k_base" } }));
        }

        [Test]
        public static void CustomSlicerReturningHalfAGroupDropsIt()
        {
            using (var half = Slicer.Custom((items, scores, target, max) =>
                Enumerable.Range(0, items.Count).Where(i => items[i].Content == Call).ToArray()))
            using (var placer = Placer.Chronological())
            using (var scorer = Scorer.Reflexive())
            using (var p = new Pipeline(scorer, half, placer))
            using (var b = new Budget(100, 100))
            {
                var r = p.Run(ToolChat(true), b, TraceDetail.Item);
                Assert.Equal(0, r.Indices.Count, "placed");
                Assert.True(r.Report.Groups.Count == 1 && r.Report.Groups[0].PartialSelection, "partial selection");
            }
        }
    }
}
