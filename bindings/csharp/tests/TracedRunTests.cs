using System;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Ctxpack.Tests
{
    static class TracedRunTests
    {
        static readonly ContextItem[] Items =
        {
            Util.Day("a", 4, 1), Util.Day("b", 4, 3), Util.Day("c", 4, 2), Util.Day("a", 4, 5),
        };

        [Test]
        public static void EachPartIsReadOnDemandAndEqualsTheEagerReport()
        {
            using (var recency = Scorer.Recency())
            using (var p = Util.Pipeline(recency))
            using (var list = new ItemList(Items))
            using (var b = new Budget(10, 10))
            {
                var eager = p.Run(list, b, TraceDetail.Item);
                var lazy = p.RunTraced(list, b);
                Assert.Sequence(eager.Indices, lazy.Indices, "indices");
                Assert.Sequence(eager.Scores, lazy.Scores, "scores");
                Assert.Equal(eager.Report.TotalCandidates, lazy.TotalCandidates, "candidates");
                Assert.Equal(eager.Report.TotalTokensConsidered, lazy.TotalTokensConsidered, "tokens");
                Assert.Sequence(eager.Report.Excluded.Select(e => $"{e.Index}:{e.Name}:{e.Score:R}"),
                    lazy.Excluded.Select(e => $"{e.Index}:{e.Name}:{e.Score:R}"), "excluded");
                Assert.Sequence(eager.Report.Included.Select(e => e.Index), lazy.Included.Select(e => e.Index), "included");
                Assert.Equal(eager.Report.Events.Count, lazy.Events.Count, "events");
                Assert.Equal(eager.Report.Analytics.BudgetUtilization, lazy.Analytics.BudgetUtilization, "utilization");
                Assert.True(lazy.Json.StartsWith("{"), "json");
                Assert.True(ReferenceEquals(lazy.Excluded, lazy.Excluded), "a part is read once and kept");
                lazy.Dispose();
                lazy.Dispose();
                Assert.True(lazy.Json.StartsWith("{"), "a part read before Dispose stays");
                Assert.Throws<ObjectDisposedException>(() => { var _ = lazy.Shortfalls; }, "an unread part after Dispose");
            }
        }

        [Test]
        public static void ConcurrentReadersAndDispose()
        {
            using (var recency = Scorer.Recency())
            using (var p = Util.Pipeline(recency))
            using (var list = new ItemList(Items))
            using (var b = new Budget(10, 10))
            {
                for (int round = 0; round < 20; round++)
                {
                    var r = p.RunTraced(list, b, TraceDetail.Stage);
                    Action[] readers =
                    {
                        () => { var _ = r.Excluded; }, () => { var _ = r.Json; }, () => { var _ = r.Analytics; }, r.Dispose,
                    };
                    Parallel.ForEach(readers, read =>
                    {
                        try { read(); }
                        catch (ObjectDisposedException) { }
                    });
                }
            }
        }

        [Test]
        public static void ACancelledTracedRunThrowsOperationCanceled()
        {
            using (var recency = Scorer.Recency())
            using (var p = Util.Pipeline(recency))
            using (var list = new ItemList(Items))
            using (var b = new Budget(10, 10))
            {
                var e = Assert.Throws<OperationCanceledException>(() => p.RunTraced(list, b, TraceDetail.Item, new CancellationToken(true)));
                Assert.Equal(Status.Cancelled, ((CtxpackException)e.InnerException).Status, "status");
            }
        }
    }
}
