using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.CompilerServices;

namespace Ctxpack.Tests
{
    static class CustomComponentTests
    {
        /// Longer contents score higher: 0.01 per character.
        static IReadOnlyList<double> ByLength(IReadOnlyList<ContextItem> items) => items.Select(i => i.Content.Length / 100.0).ToArray();

        static RunResult RunOnce(Scorer scorer, TraceDetail trace = TraceDetail.None)
        {
            using (var p = Util.Pipeline(scorer))
            using (var b = new Budget(20, 20))
            {
                return p.Run(new[] { Util.Day("short", 10, 0), Util.Day("a much longer one", 10, 1), Util.Day("middling", 10, 2) }, b, trace);
            }
        }

        [Test]
        public static void CustomScorerSelects()
        {
            using (var s = Scorer.Custom(ByLength))
            {
                var r = RunOnce(s, TraceDetail.Stage);
                Assert.Sequence(new[] { 1, 2 }, r.Indices, "indices"); // the two longest, chronologically
                Assert.Near(new[] { 0.17, 0.08 }, r.Scores);
                Assert.Equal(ExclusionReason.BudgetExceeded, r.Report.Excluded.Single().Reason, "excluded reason");
            }
        }

        /// Every item field reaches a C# callback unchanged (defaults filled in by the library).
        [Test]
        public static void CustomScorerSeesEveryField()
        {
            var full = new ContextItem("full", 7)
            {
                Kind = "Document", Source = "rag", Priority = -3, Tags = new List<string> { "x", "y", "x" },
                Metadata = new Dictionary<string, string> { ["cupel:trust"] = "0.5", ["b"] = "é" },
                TimestampUnixNanos = 1709209800123456789, FutureRelevanceHint = 1.5, OriginalTokens = 70,
            };
            IReadOnlyList<ContextItem> seen = null;
            using (var s = Scorer.Custom(items => { seen = items; return items.Select(i => 0.5).ToArray(); }))
            using (var p = Util.Pipeline(s))
            using (var b = new Budget(100, 100))
            {
                p.Run(new[] { full, new ContextItem("bare", 1) }, b);
            }
            var f = seen[0];
            Assert.Equal("full", f.Content);
            Assert.Equal(7L, f.Tokens);
            Assert.Equal("Document", f.Kind);
            Assert.Equal("rag", f.Source);
            Assert.Equal((long?)-3, f.Priority);
            Assert.Sequence(new[] { "x", "y", "x" }, f.Tags, "tags");
            Assert.Sequence(new[] { "b=é", "cupel:trust=0.5" }, f.Metadata.Select(kv => kv.Key + "=" + kv.Value).OrderBy(x => x, StringComparer.Ordinal), "metadata");
            Assert.Equal((long?)1709209800123456789, f.TimestampUnixNanos, "timestamp (ns)");
            Assert.Equal((double?)1.5, f.FutureRelevanceHint);
            Assert.Equal((long?)70, f.OriginalTokens);
            var bare = seen[1];
            Assert.Equal("Message", bare.Kind);
            Assert.Equal("Chat", bare.Source);
            Assert.True(bare.Priority == null && bare.Timestamp == null && bare.FutureRelevanceHint == null && bare.OriginalTokens == null, "bare optionals");
            Assert.True(bare.Tags.Count == 0 && bare.Metadata.Count == 0 && !bare.Pinned, "bare collections");
        }

        [Test]
        public static void ThrowingScorerFailsTheRun()
        {
            using (var s = Scorer.Custom(items => { throw new TimeoutException("the embedding service is down"); }))
            {
                // Many failures on one thread exercise the per-thread message slot.
                for (int i = 0; i < 50; i++)
                {
                    var e = Assert.Fails(Status.Callback, () => RunOnce(s));
                    Assert.True(e.LibraryMessage.Contains("TimeoutException: the embedding service is down"), e.LibraryMessage);
                }
            }
            // A runtime exception (not thrown on purpose) does not cross into native code either.
            using (var s = Scorer.Custom(items => { object o = null; return new[] { o.GetHashCode() / 1.0 }; }))
            {
                var e = Assert.Fails(Status.Callback, () => RunOnce(s));
                Assert.True(e.LibraryMessage.Contains("NullReferenceException"), e.LibraryMessage);
            }
        }

        [Test]
        public static void WrongNumberOfScores()
        {
            using (var s = Scorer.Custom(items => new[] { 1.0 }))
            {
                var e = Assert.Fails(Status.Callback, () => RunOnce(s));
                Assert.True(e.LibraryMessage.Contains("returned 1 scores for 3 items"), e.LibraryMessage);
            }
        }

        [Test]
        public static void NullDelegatesAreRejected()
        {
            var live = Callbacks.Live;
            Assert.Throws<ArgumentNullException>(() => Scorer.Custom(null));
            Assert.Throws<ArgumentNullException>(() => Slicer.Custom(null));
            Assert.Throws<ArgumentNullException>(() => Placer.Custom(null));
            Assert.Equal(live, Callbacks.Live, "live callbacks");
        }

        // Built in a separate method so that no local keeps the delegate alive.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static Pipeline PipelineWithUnreferencedDelegate(out WeakReference delegateRef)
        {
            var bias = new double[] { 0.25 }; // captured state
            ScoreFunction score = items => items.Select(i => bias[0] + i.Content.Length / 100.0).ToArray();
            delegateRef = new WeakReference(score);
            using (var s = Scorer.Custom(score))
            {
                return Util.Pipeline(s);
            }
        }

        static void CollectGarbage()
        {
            for (int i = 0; i < 3; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
        }

        /// The delegate lives as long as the library holds the scorer (here through the
        /// pipeline), not as long as the C# Scorer object.
        [Test]
        public static void DelegateLivesAsLongAsThePipeline()
        {
            var live = Callbacks.Live;
            var pipeline = PipelineWithUnreferencedDelegate(out var delegateRef);
            CollectGarbage();
            Assert.True(delegateRef.IsAlive, "the delegate was collected while the pipeline holds the scorer");
            Assert.Equal(live + 1, Callbacks.Live, "live callbacks while the pipeline exists");
            using (var b = new Budget(100, 100))
            {
                var r = pipeline.Run(new[] { Util.Day("abcd", 1, 0) }, b);
                Assert.Near(new[] { 0.29 }, r.Scores);
            }
            pipeline.Dispose(); // the last reference: destroy frees the GCHandle
            Assert.Equal(live, Callbacks.Live, "live callbacks after the pipeline is disposed");
            CollectGarbage();
            Assert.True(!delegateRef.IsAlive, "the delegate outlived its last native reference");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void AbandonComponents()
        {
            for (int i = 0; i < 20; i++) Util.Pipeline(Scorer.Custom(ByLength));
        }

        /// Components never disposed are released by the SafeHandle finalizers, and destroy
        /// runs (from the finalizer thread) when the last one goes.
        [Test]
        public static void FinalizersRelease()
        {
            var live = Callbacks.Live;
            AbandonComponents();
            Assert.True(Callbacks.Live >= live + 20, "components were destroyed while still referenced");
            for (int i = 0; i < 50 && Callbacks.Live != live; i++) CollectGarbage();
            Assert.Equal(live, Callbacks.Live, "live callbacks after collection");
        }

        [Test]
        public static void DisposeTwiceAndUseAfterDispose()
        {
            var s = Scorer.Recency();
            s.Dispose();
            s.Dispose();
            Assert.Throws<ObjectDisposedException>(() => Util.Pipeline(s), "pipeline from a disposed scorer");
            Assert.Throws<ArgumentNullException>(() => Util.Pipeline(null), "pipeline without a scorer");
            Assert.Throws<ArgumentNullException>(() => Scorer.Scaled(null), "scaled scorer without an inner scorer");
        }

        [Test]
        public static void CustomSlicerAndPlacer()
        {
            // The slicer takes every other candidate in score order; the placer reverses.
            using (var slicer = Slicer.Custom((items, scores, target, max) =>
            {
                Assert.Equal(100L, target, "target");
                Assert.Equal(100L, max, "max");
                for (int i = 1; i < scores.Count; i++) Assert.True(scores[i] <= scores[i - 1], "candidates sorted by score");
                return Enumerable.Range(0, items.Count).Where(i => i % 2 == 0);
            }))
            using (var placer = Placer.Custom((items, scores) => Enumerable.Range(0, items.Count).Reverse().ToArray()))
            using (var scorer = Scorer.Recency())
            using (var p = new Pipeline(scorer, slicer, placer))
            using (var b = new Budget(100, 100))
            {
                var r = p.Run(new[] { Util.Day("d0", 1, 0), Util.Day("d1", 1, 1), Util.Day("d2", 1, 2), Util.Day("d3", 1, 3) }, b);
                // Sorted d3 d2 d1 d0; every other: d3 d1; merged in sort order, reversed.
                Assert.Sequence(new[] { 1, 3 }, r.Indices, "indices");
            }
        }

        [Test]
        public static void CustomPlacerMustReturnAPermutation()
        {
            using (var placer = Placer.Custom((items, scores) => new int[items.Count]))
            using (var slicer = Slicer.Greedy())
            using (var scorer = Scorer.Recency())
            using (var p = new Pipeline(scorer, slicer, placer))
            using (var b = new Budget(10, 10))
            {
                var e = Assert.Fails(Status.Callback, () => p.Run(new[] { Util.Day("a", 1, 0), Util.Day("b", 1, 1) }, b));
                Assert.True(e.LibraryMessage.Contains("permutation"), e.LibraryMessage);
            }
        }
    }
}
