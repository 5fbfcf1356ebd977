using System;
using System.Collections.Generic;
using System.Linq;

namespace Ctxpack.Tests
{
    /// Item variants through the C ABI (docs/variants.md): the form placed, the Downgraded
    /// reason and its fields, the option, pruning, and invalid variants.
    static class VariantTests
    {
        static Pipeline ReflexiveGreedy(bool useVariants = true)
        {
            using (var sc = Scorer.Reflexive())
            using (var sl = Slicer.Greedy())
            using (var pl = Placer.Chronological())
            {
                return new Pipeline(sc, sl, pl, useVariants: useVariants);
            }
        }

        // Greedy takes the 10-token question first (density 0.05 against 0.009), leaving 40
        // of 50: the 100-token log does not fit, its 20-token summary does.
        static ContextItem[] LogAndQuestion() => new[]
        {
            new ContextItem("<100 tokens of test log>", 100)
            {
                FutureRelevanceHint = 0.9,
                Variants = { new Variant("3 tests fail: rounding off by one cent", 20, 0.5) },
            },
            new ContextItem("why did the build fail?", 10) { FutureRelevanceHint = 0.5 },
        };

        [Test]
        public static void ALongItemIsPlacedAsItsSummary()
        {
            using (var p = ReflexiveGreedy())
            using (var b = new Budget(50, 50))
            {
                var r = p.Run(LogAndQuestion(), b, TraceDetail.Stage);
                Assert.Sequence(new[] { 0, 1 }, r.Indices, "indices");
                Assert.Sequence(new[] { 1, 0 }, r.Forms, "forms");
                Assert.Sequence(new[] { InclusionReason.Downgraded, InclusionReason.Scored }, r.Reasons, "reasons");
                var e = r.Report.Included[0];
                Assert.Equal(InclusionReason.Downgraded, e.Reason, "reason");
                Assert.Equal(1, e.Form, "form");
                Assert.Equal(100L, e.FullTokens, "full tokens");
                Assert.Equal(20L, e.ChosenTokens, "chosen tokens");
                Assert.Equal(20L, e.AvailableTokens, "available tokens"); // 50 - (20 + 10)
                Assert.Equal(DowngradeCause.BudgetExceeded, e.Cause, "cause");
                Assert.Near(0.9, e.Score, "score");
                Assert.Equal(DowngradeCause.None, r.Report.Included[1].Cause, "plain cause");
                Assert.True(r.Report.Json.Contains("\"reason\":\"Downgraded\",\"form\":1,\"full_tokens\":100"), r.Report.Json);
            }
            using (var off = ReflexiveGreedy(useVariants: false))
            using (var b = new Budget(50, 50))
            {
                var r = off.Run(LogAndQuestion(), b);
                Assert.Sequence(new[] { 1 }, r.Indices, "indices without variants");
                Assert.Sequence(new[] { 0 }, r.Forms, "forms without variants");
            }
        }

        [Test]
        public static void VariantsNotCheaperThanTheItemArePruned()
        {
            var item = new ContextItem("the item", 100)
            {
                FutureRelevanceHint = 0.5,
                Variants = { new Variant("longer", 150, 0.9), new Variant("summary", 20, 0.5), new Variant("same length, less", 100, 0.7) },
            };
            using (var p = ReflexiveGreedy())
            using (var b = new Budget(500, 500))
            {
                var r = p.Run(new[] { item }, b, TraceDetail.Stage);
                var pruned = r.Report.PrunedForms.Select(f => (f.Index, f.Form, f.DominatedBy)).ToArray();
                Assert.Sequence(new[] { (0, 1, 0), (0, 3, 0) }, pruned, "pruned forms");
                Assert.Sequence(new[] { 0 }, r.Forms, "forms");
            }
        }

        [Test]
        public static void InvalidVariantsAreRejected()
        {
            var rows = new (Variant, Status, string)[]
            {
                (new Variant("stub", 2, double.NaN), Status.InvalidArgument, "form 1: quality must be in (0, 1], got NaN"),
                (new Variant("stub", 2, 0), Status.InvalidArgument, "quality must be in (0, 1], got 0"),
                (new Variant("stub", 2, 1.5), Status.InvalidArgument, "quality must be in (0, 1], got 1.5"),
                (new Variant("", 2, 0.5), Status.InvalidArgument, "form 1: content must not be empty"),
                (new Variant("stub", -1, 0.5), Status.InvalidArgument, "tokens must be >= 0, got -1"),
            };
            foreach (var row in rows)
            {
                var (variant, status, message) = row;
                var items = new[] { new ContextItem("fine", 5), new ContextItem("log", 100) { Variants = { variant } } };
                var e = Assert.Fails(status, () => new ItemList(items).Dispose(), message);
                Assert.True(e.Message.Contains(message) && e.Message.Contains("item 1:"), e.Message);
            }
        }
    }
}
