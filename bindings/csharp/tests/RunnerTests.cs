using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;

namespace Ctxpack.Tests
{
    static class RunnerTests
    {
        /// `n` dated items, every seventh repeating the content before it, with priorities.
        static List<ContextItem> Items(int n, int seed) => Enumerable.Range(0, n).Select(i =>
            new ContextItem($"turn {seed}/{(i % 7 == 6 ? i - 1 : i)}", 3 + (i * 5 + seed) % 23)
            {
                Timestamp = Util.Jan2024.AddDays(i % 40),
                Priority = (i + seed) % 9,
            }).ToList();

        static void Same(RunResult want, RunResult got, string what)
        {
            Assert.Sequence(want.Indices, got.Indices, what + ": indices");
            Assert.Sequence(want.Scores, got.Scores, what + ": scores");
            Assert.Sequence(want.Reasons, got.Reasons, what + ": reasons");
            Assert.Equal(want.Report == null, got.Report == null, what + ": report presence");
        }

        /// A Runner answers every run as Pipeline.Run does, across sizes, traced and untraced
        /// runs, a failing run and Dispose.
        [Test]
        public static void RunsAsPipelineRun()
        {
            using (var recency = Scorer.Recency())
            using (var pipeline = Util.Pipeline(recency))
            using (var runner = new Runner())
            {
                var sizes = new[] { 30, 30, 200, 10, 200, 0, 200 };
                for (int round = 0; round < sizes.Length; round++)
                {
                    var items = Items(sizes[round], round);
                    long total = items.Sum(i => i.Tokens);
                    using (var budget = new Budget(total + 1, total / 2))
                    {
                        foreach (var trace in new[] { TraceDetail.None, TraceDetail.Item })
                        {
                            var want = pipeline.Run(items, budget, trace);
                            var got = runner.Run(pipeline, items, budget, trace);
                            Same(want, got, $"round {round}, {trace}");
                            if (items.Count > 1)
                                Assert.True(got.Indices.Count > 1 && got.Indices.Count < items.Count, "a telling comparison");
                        }
                        if (round == 3)
                        {
                            var bad = new List<ContextItem> { new ContextItem("ok", 1), new ContextItem("", 1) };
                            Assert.Fails(Status.EmptyContent, () => runner.Run(pipeline, bad, budget));
                            runner.Dispose();
                        }
                    }
                }
            }
        }

        /// Pipeline.ReleaseMemory frees what the pipeline keeps between one-shot runs: runs
        /// before and after it answer the same (traced and cancellable runs too), it may be
        /// called again with nothing kept, and a disposed pipeline throws
        /// ObjectDisposedException as its other methods do.
        [Test]
        public static void ReleaseMemoryBetweenOneShotRuns()
        {
            var items = Items(300, 3);
            long total = items.Sum(i => i.Tokens);
            var pipeline = Pipeline.FromPreset("chat");
            using (pipeline)
            using (var budget = new Budget(total, total / 2))
            using (var cancellation = new CancellationTokenSource())
            {
                pipeline.ReleaseMemory(); // nothing kept yet
                foreach (var trace in new[] { TraceDetail.None, TraceDetail.Item })
                {
                    var first = pipeline.Run(items, budget, trace);
                    Assert.True(first.Indices.Count > 1 && first.Indices.Count < items.Count, "a telling comparison");
                    var releases = new[] { false, true, false, true, true, false };
                    for (int step = 0; step < releases.Length; step++)
                    {
                        if (releases[step]) pipeline.ReleaseMemory();
                        var what = $"{trace}, step {step}";
                        var again = pipeline.Run(items, budget, trace);
                        Same(first, again, what);
                        Same(first, pipeline.Run(items, budget, cancellation.Token, trace), what + ", cancellable");
                        if (trace == TraceDetail.None) continue;
                        Assert.Sequence(first.Report.Included.Select(i => $"{i.Index}:{i.Score:R}:{i.Reason}"),
                            again.Report.Included.Select(i => $"{i.Index}:{i.Score:R}:{i.Reason}"), what + ": report included");
                        Assert.Sequence(first.Report.Excluded.Select(e => $"{e.Index}:{e.Name}:{e.Score:R}"),
                            again.Report.Excluded.Select(e => $"{e.Index}:{e.Name}:{e.Score:R}"), what + ": report excluded");
                    }
                }
            }
            Assert.Throws<ObjectDisposedException>(() => pipeline.ReleaseMemory(), "ReleaseMemory after Dispose");
        }

        /// Threads sharing one Runner are serialised: every answer is Pipeline.Run's.
        [Test]
        public static void SharedByThreads()
        {
            using (var recency = Scorer.Recency())
            using (var pipeline = Util.Pipeline(recency))
            using (var runner = new Runner())
            using (var budget = new Budget(10_000, 400))
            {
                var errors = new List<string>();
                var threads = Enumerable.Range(0, 8).Select(g => new Thread(() =>
                {
                    for (int i = 0; i < 20; i++)
                    {
                        var items = Items(20 + g * 10, g);
                        var want = string.Join(",", pipeline.Run(items, budget).Indices);
                        var got = string.Join(",", runner.Run(pipeline, items, budget).Indices);
                        if (want != got) lock (errors) errors.Add($"thread {g}, run {i}: {got} / {want}");
                    }
                })).ToList();
                threads.ForEach(t => t.Start());
                threads.ForEach(t => t.Join());
                Assert.Equal(0, errors.Count, string.Join("; ", errors));
            }
        }
    }
}
