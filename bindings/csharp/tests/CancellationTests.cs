using System;
using System.Diagnostics;
using System.Linq;
using System.Threading;

namespace Ctxpack.Tests
{
    static class CancellationTests
    {
        /// A knapsack run that takes over a second unless cancelled: 12 000 items against a
        /// 50 000-token target with one-token buckets (a DP of 6*10^8 cells).
        static (Pipeline, ItemList, Budget) LongKnapsack()
        {
            using (var scorer = Scorer.Priority())
            using (var slicer = Slicer.Knapsack(1))
            using (var placer = Placer.Chronological())
            {
                var items = Enumerable.Range(0, 12000)
                    .Select(i => new ContextItem($"item {i}", 5 + i * 37 % 40) { Priority = i % 7 }).ToList();
                return (new Pipeline(scorer, slicer, placer), new ItemList(items), new Budget(50000, 50000));
            }
        }

        [Test]
        public static void ATokenCancelledBeforeTheRunThrowsOperationCanceled()
        {
            using (var recency = Scorer.Recency())
            using (var p = Util.Pipeline(recency))
            using (var b = new Budget(10, 10))
            {
                var token = new CancellationToken(true);
                var e = Assert.Throws<OperationCanceledException>(() => p.Run(new[] { Util.Day("a", 1, 0) }, b, token));
                Assert.Equal(token, e.CancellationToken, "the exception's token");
                var inner = e.InnerException as CtxpackException;
                Assert.True(inner != null, "the library's exception is the inner one");
                Assert.Equal(Status.Cancelled, inner.Status, "status");
                Assert.Equal("cancelled: the run was cancelled before it started", inner.LibraryMessage, "message");
            }
        }

        [Test]
        public static void CancellingFromAnotherThreadStopsALongKnapsackRunQuickly()
        {
            var (p, list, b) = LongKnapsack();
            using (p)
            using (list)
            using (b)
            using (var source = new CancellationTokenSource())
            {
                source.CancelAfter(50);
                var watch = Stopwatch.StartNew();
                var e = Assert.Throws<OperationCanceledException>(() => p.Run(list, b, source.Token));
                Assert.Equal(Status.Cancelled, ((CtxpackException)e.InnerException).Status, "status");
                Assert.True(watch.ElapsedMilliseconds < 1050, $"returned after {watch.ElapsedMilliseconds} ms");
            }
        }

        [Test]
        public static void ATokenNeverCancelledChangesNothing()
        {
            var items = new[] { Util.Day("a", 4, 1), Util.Day("b", 4, 3), Util.Day("c", 4, 2) };
            using (var recency = Scorer.Recency())
            using (var p = Util.Pipeline(recency))
            using (var b = new Budget(10, 10))
            using (var source = new CancellationTokenSource())
            {
                var plain = p.Run(items, b, TraceDetail.Stage);
                var with = p.Run(items, b, source.Token, TraceDetail.Stage);
                Assert.Sequence(plain.Indices, with.Indices, "indices");
                Assert.Sequence(plain.Report.Excluded.Select(x => x.Index), with.Report.Excluded.Select(x => x.Index), "excluded");
            }
        }

        static ContextItem[] Messages(int n) =>
            Enumerable.Range(0, n).Select(i => Util.Day($"message {i}", 20, i)).ToArray();

        [Test]
        public static void APrefixRunCancelledBeforeItStartsKeepsThePreviousState()
        {
            using (var recency = Scorer.Recency())
            using (var p = Util.Pipeline(recency))
            using (var b = new Budget(100, 100))
            {
                var first = p.RunPrefix(Messages(4), b);
                using (first.State)
                {
                    var token = new CancellationToken(true);
                    var e = Assert.Throws<OperationCanceledException>(() =>
                        p.RunPrefix(Messages(5), b, token, previous: first.State));
                    Assert.Equal(token, e.CancellationToken, "the exception's token");
                    Assert.Equal(Status.Cancelled, ((CtxpackException)e.InnerException).Status, "status");
                    // The previous state is untouched: the next turn continues from it.
                    var next = p.RunPrefix(Messages(5), b, CancellationToken.None, previous: first.State);
                    using (next.State) Assert.Equal(2UL, next.Reuse.Turn, "the turn after a cancelled one");
                }
            }
        }

        [Test]
        public static void CancellingStopsALongPrefixRunQuickly()
        {
            var (p, list, b) = LongKnapsack();
            using (p)
            using (list)
            using (b)
            using (var source = new CancellationTokenSource())
            {
                source.CancelAfter(50);
                var watch = Stopwatch.StartNew();
                var e = Assert.Throws<OperationCanceledException>(() =>
                    p.RunPrefix(list, b, source.Token, new PrefixOptions { Mode = PrefixMode.Measure }));
                Assert.Equal(Status.Cancelled, ((CtxpackException)e.InnerException).Status, "status");
                Assert.True(watch.ElapsedMilliseconds < 1050, $"returned after {watch.ElapsedMilliseconds} ms");
            }
        }

        [Test]
        public static void APrefixRunWithATokenNeverCancelledChangesNothing()
        {
            using (var recency = Scorer.Recency())
            using (var p = Util.Pipeline(recency))
            using (var b = new Budget(100, 60))
            using (var source = new CancellationTokenSource())
            {
                var want = p.RunPrefix(Messages(6), b, trace: TraceDetail.Stage);
                var got = p.RunPrefix(Messages(6), b, source.Token, trace: TraceDetail.Stage);
                using (want.State)
                using (got.State)
                {
                    Assert.Sequence(want.Result.Indices, got.Result.Indices, "indices");
                    Assert.Equal(want.Reuse.Json, got.Reuse.Json, "reuse report");
                }
            }
        }
    }
}
