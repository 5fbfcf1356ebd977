using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;

namespace Ctxpack.Tests
{
    static class ConcurrencyTests
    {
        /// A comparable digest of a result (everything but wall-clock durations).
        static string Digest(RunResult r) => string.Join("|",
            string.Join(",", r.Indices),
            string.Join(",", r.Scores.Select(s => s.ToString("R"))),
            string.Join(",", r.Reasons),
            string.Join(",", r.Report.Excluded.Select(e => $"{e.Index}:{e.Name}:{e.Score:R}:{e.AvailableTokens}")),
            string.Join(",", r.Report.Events.Select(e => $"{e.Stage}:{e.ItemCount}:{e.ItemIndex}")));

        /// One pipeline (with a C# scorer called back concurrently), one item list and one
        /// budget shared by 8 threads; every result must equal a sequential run. The threads
        /// also release the pipeline's kept one-shot memory now and then, while others run.
        [Test]
        public static void ConcurrentRunsMatchASequentialRun()
        {
            const int threads = 8, runsEach = 25, n = 120;
            var items = Enumerable.Range(0, n).Select(i => new ContextItem($"item {i} {new string('x', i % 13)}", 5 + i % 17)
            {
                Kind = new[] { "Message", "Document", "ToolOutput" }[i % 3],
                Timestamp = Util.Jan2024.AddDays(i % 40),
                Pinned = i % 25 == 0,
            }).ToList();
            long calls = 0;
            using (var custom = Scorer.Custom(xs => { Interlocked.Increment(ref calls); return xs.Select(x => x.Content.Length / 100.0).ToArray(); }))
            using (var kind = Scorer.Kind())
            using (var recency = Scorer.Recency())
            using (var scorer = Scorer.Composite(custom.WithWeight(1), kind.WithWeight(1), recency.WithWeight(2)))
            using (var pipeline = Util.Pipeline(scorer, overflow: OverflowStrategy.Truncate))
            using (var list = new ItemList(items))
            using (var budget = new Budget(800, 600, outputReserve: 50))
            {
                var reference = Digest(pipeline.Run(list, budget, TraceDetail.Item));
                var errors = new List<string>();
                var workers = Enumerable.Range(0, threads).Select(t => new Thread(() =>
                {
                    for (int r = 0; r < runsEach; r++)
                    {
                        try
                        {
                            if ((t + r) % 5 == 0) pipeline.ReleaseMemory();
                            var result = (t + r) % 2 == 0 ? pipeline.Run(list, budget, TraceDetail.Item) : pipeline.Run(items, budget, TraceDetail.Item);
                            if (Digest(result) != reference) lock (errors) errors.Add($"thread {t} run {r} differs");
                        }
                        catch (Exception e)
                        {
                            lock (errors) errors.Add($"thread {t} run {r}: {e.Message}");
                        }
                    }
                })).ToList();
                workers.ForEach(w => w.Start());
                workers.ForEach(w => w.Join());
                Assert.True(errors.Count == 0, string.Join("; ", errors.Take(5)));
                Assert.Equal(1L + threads * runsEach, Interlocked.Read(ref calls), "custom scorer calls");
            }
        }
    }
}
