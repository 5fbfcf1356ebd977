using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Ctxpack.Tests
{
    /// A library object must stay alive until the binding's last native call that uses it,
    /// even when the caller drops its last reference as soon as the call starts. Each
    /// operation below builds its pipelines, components and budget in a method that returns
    /// only the copied-out answer and never disposes them, so only the binding keeps them
    /// reachable; a thread forces collections and runs finalizers meanwhile. A handle freed
    /// too early shows as Status.WrongHandleType, a different answer, or a crash.
    ///
    /// Mono scans stacks conservatively, so an object stays alive while any frame still
    /// holds it, and the early free this test looks for only shows on a precise collector
    /// (CoreCLR): the Go binding's bug (the run's pipeline and budget passed to the
    /// analytics calls as raw pointers) transplanted into this binding still passed here.
    /// On Mono the test checks the rest: finalizers freeing components, pipelines and
    /// budgets on their own thread while other threads run pipelines built from them.
    static class GcStressTests
    {
        static readonly ContextItem[] Items = Enumerable.Range(0, 200).Select(i =>
            new ContextItem($"gc stress item {i}", 3 + i % 23)
            {
                Kind = new[] { "Message", "Document", "ToolOutput", "Memory" }[i % 4],
                Priority = i % 7,
                Timestamp = Util.Jan2024.AddDays(i % 50),
                Tags = new List<string> { $"t{i % 5}" },
            }).ToArray();

        static readonly double[] Scores = Enumerable.Range(0, Items.Length).Select(i => (i % 11) / 10.0).ToArray();

        /// Everything of a result but wall-clock durations (and the JSON, which holds them).
        internal static string Digest(RunResult r)
        {
            var parts = new List<string>
            {
                string.Join(",", r.Indices), string.Join(",", r.Scores.Select(s => s.ToString("R"))), string.Join(",", r.Reasons),
            };
            if (r.Report != null)
            {
                var a = r.Report.Analytics;
                parts.Add(string.Join(",", r.Report.Excluded.Select(e => $"{e.Index}:{e.Name}:{e.Score:R}")));
                parts.Add(string.Join(",", r.Report.Events.Select(e => $"{e.Stage}:{e.ItemCount}:{e.ItemIndex}")));
                parts.Add($"{a.BudgetUtilization:R}/{a.KindDiversity}/{a.TimestampCoverage:R}/" +
                          string.Join(",", a.QuotaUtilization.Select(q => $"{q.Kind}:{q.Actual:R}:{q.Utilization:R}")));
            }
            return string.Join("|", parts);
        }

        // The helpers below return objects nobody disposes; NoInlining keeps them from being
        // folded into a caller that could keep them alive by accident.

        [MethodImpl(MethodImplOptions.NoInlining)]
        static Budget NewBudget() => new Budget(1200, 900, outputReserve: 40);

        [MethodImpl(MethodImplOptions.NoInlining)]
        static Pipeline QuotaPipeline() => new Pipeline(
            Scorer.Composite(Scorer.Priority().WithWeight(1), Scorer.Recency().WithWeight(2)),
            Slicer.Quota(Slicer.Greedy(), new QuotaEntry("Document", 10, 40), new QuotaEntry("Message", 0, 50)),
            Placer.UShaped(), overflow: OverflowStrategy.Truncate);

        sealed class Operation
        {
            public readonly string Name;
            public readonly Func<ItemList, string> Run;
            public Operation(string name, Func<ItemList, string> run) { Name = name; Run = run; }
        }

        static Operation[] Operations() => new[]
        {
            new Operation("Pipeline.Run(ItemList)", list => Digest(QuotaPipeline().Run(list, NewBudget(), TraceDetail.Item))),
            new Operation("Pipeline.Run(items)", _ => Digest(Pipeline.FromPreset("chat").Run(Items, NewBudget(), TraceDetail.Item))),
            new Operation("Pipeline.DryRun", _ => Digest(QuotaPipeline().DryRun(Items, NewBudget()))),
            new Operation("Sensitivity.Compare", _ =>
            {
                var s = Sensitivity.Compare(Items, NewBudget(), new SensitivityVariant("quota", QuotaPipeline()),
                    new SensitivityVariant("rag", Pipeline.FromPreset("rag")));
                return string.Join("#", s.Results.Select(Digest)) + "#" +
                       string.Join(",", s.Swings.Select(w => $"{w.Index}:{string.Join("/", w.Statuses)}"));
            }),
            new Operation("Pipeline.MarginalItems", _ => string.Join(",", Pipeline.FromPreset("chat").MarginalItems(Items, NewBudget(), 200))),
            new Operation("Pipeline.MinBudgetFor", _ => Pipeline.FromPreset("chat").MinBudgetFor(Items, 7, 5000).ToString()),
            new Operation("Pipeline.ToPolicyJson", _ => QuotaPipeline().ToPolicyJson(true)),
            new Operation("Scorer.Score", _ => string.Join(",", Scorer.Scaled(Scorer.Priority()).Score(Items).Select(x => x.ToString("R")))),
            new Operation("Slicer.Slice", _ =>
            {
                var r = Slicer.CountQuota(Slicer.Greedy(), Scarcity.Degrade, new CountQuotaEntry("Memory", 2, 10))
                    .Slice(Items, Scores, NewBudget());
                return string.Join(",", r.Selected) + "/" + string.Join(",", r.CapExcluded) + "/" + string.Join(",", r.Shortfalls);
            }),
            new Operation("Placer.Place", _ => string.Join(",", Placer.UShaped().Place(Items, Scores))),
            // The ItemList overloads, each over a list nothing but the call references.
            new Operation("Pipeline.DryRun(ItemList)", _ => Digest(QuotaPipeline().DryRun(new ItemList(Items), NewBudget()))),
            new Operation("Sensitivity.Compare(ItemList)", _ =>
            {
                var s = Sensitivity.Compare(new ItemList(Items), NewBudget(), new SensitivityVariant("quota", QuotaPipeline()),
                    new SensitivityVariant("rag", Pipeline.FromPreset("rag")));
                return string.Join("#", s.Results.Select(Digest)) + "#" +
                       string.Join(",", s.Swings.Select(w => $"{w.Index}:{string.Join("/", w.Statuses)}"));
            }),
            new Operation("Pipeline.MarginalItems(ItemList)", _ =>
                string.Join(",", Pipeline.FromPreset("chat").MarginalItems(new ItemList(Items), NewBudget(), 200))),
            new Operation("Pipeline.MinBudgetFor(ItemList)", _ =>
                Pipeline.FromPreset("chat").MinBudgetFor(new ItemList(Items), 7, 5000).ToString()),
            new Operation("Scorer.Score(ItemList)", _ =>
                string.Join(",", Scorer.Scaled(Scorer.Priority()).Score(new ItemList(Items)).Select(x => x.ToString("R")))),
            new Operation("Slicer.Slice(ItemList)", _ =>
            {
                var r = Slicer.CountQuota(Slicer.Greedy(), Scarcity.Degrade, new CountQuotaEntry("Memory", 2, 10))
                    .Slice(new ItemList(Items), Scores, NewBudget());
                return string.Join(",", r.Selected) + "/" + string.Join(",", r.CapExcluded) + "/" + string.Join(",", r.Shortfalls);
            }),
            new Operation("Placer.Place(ItemList)", _ => string.Join(",", Placer.UShaped().Place(new ItemList(Items), Scores))),
            new Operation("Scorer.CustomViews", _ => Digest(new Pipeline(
                Scorer.CustomViews(views => views.Select(v => (double)v.Tokens + (v.HasTag("t1") ? 1 : 0)).ToArray()),
                Slicer.Greedy(), Placer.Chronological()).Run(new ItemList(Items), NewBudget()))),
            new Operation("ItemList.Count", _ => new ItemList(Items.Take(50)).Count.ToString()),
        };

        [Test]
        public static void HandlesOutliveEveryCallUnderGC()
        {
            const int threads = 4, runsEach = 120;
            using (var list = new ItemList(Items))
            {
                var ops = Operations();
                var want = ops.Select(op => op.Run(list)).ToArray();
                var failures = new int[ops.Length];
                var firstError = new string[ops.Length];
                int collections = 0;
                var stop = new ManualResetEventSlim();
                var collector = new Thread(() =>
                {
                    while (!stop.IsSet)
                    {
                        GC.Collect();
                        GC.WaitForPendingFinalizers();
                        Interlocked.Increment(ref collections);
                    }
                });
                collector.Start();
                var workers = Enumerable.Range(0, threads).Select(t => new Thread(() =>
                {
                    for (int r = 0; r < runsEach; r++)
                    {
                        int k = (t * runsEach + r) % ops.Length;
                        string error = null;
                        try
                        {
                            if (ops[k].Run(list) != want[k]) error = "the answer differs from the run before the stress";
                        }
                        catch (Exception e)
                        {
                            error = $"{e.GetType().Name}: {e.Message}";
                        }
                        if (error != null)
                        {
                            Interlocked.Increment(ref failures[k]);
                            Interlocked.CompareExchange(ref firstError[k], error, null);
                        }
                    }
                })).ToList();
                workers.ForEach(w => w.Start());
                workers.ForEach(w => w.Join());
                stop.Set();
                collector.Join();

                int failed = failures.Sum();
                Console.WriteLine($"     {failed} of {threads * runsEach} operations failed, {collections} forced collections");
                var report = Enumerable.Range(0, ops.Length).Where(k => failures[k] > 0)
                    .Select(k => $"{ops[k].Name}: {failures[k]} failed, the first: {firstError[k]}");
                Assert.True(failed == 0, string.Join("; ", report));
                Assert.True(collections >= 10, $"only {collections} collections ran during the operations");
            }
        }
    }
}
