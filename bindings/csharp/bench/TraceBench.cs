// The cost of a report (issue 20, item 3) and of copying items (issue 20, item 4) at
// 2 000 items with kinds, tags, priorities and timestamps, with the Chat preset. Not a
// test: run by hand with
//   bindings/csharp/bench/run.sh
// Untraced is Run over an item list without a trace; Eager is Run traced at Item detail
// (every report part, the JSON and the analytics copied); Lazy is RunTraced with nothing
// read; LazyJson reads the JSON only. "Run(items)" copies the items into a temporary list
// on every run. The custom-scorer cases run a batch scorer reading the tokens, the kind and
// a tag, once over copied ContextItems and once over views.
using System;
using System.Diagnostics;
using System.Linq;
using Ctxpack;

static class TraceBench
{
    static void Main(string[] args)
    {
        int runs = args.Length > 0 ? int.Parse(args[0]) : 200;
        var kinds = new[] { "Message", "Document", "ToolOutput", "Memory", "SystemPrompt" };
        var start = new DateTimeOffset(2024, 1, 1, 0, 0, 0, TimeSpan.Zero);
        var items = Enumerable.Range(0, 2000).Select(i => new ContextItem($"item {i} with some content", 20 + i * 37 % 400)
        {
            Kind = kinds[i % kinds.Length],
            Tags = new[] { $"t{i % 13}", $"u{i % 7}" },
            Priority = i % 10,
            Timestamp = start.AddSeconds(i),
        }).ToList();
        using (var p = Pipeline.FromPreset("Chat"))
        using (var list = new ItemList(items))
        using (var budget = new Budget(100000, 50000))
        {
            Measure("untraced", runs, () => p.Run(list, budget));
            Measure("eager (Run traced)", runs, () => p.Run(list, budget, TraceDetail.Item));
            Measure("lazy (RunTraced, nothing read)", runs, () => p.RunTraced(list, budget).Dispose());
            Measure("lazy + Json", runs, () => { using (var r = p.RunTraced(list, budget)) { var _ = r.Json; } });
            Measure("Run(items), untraced", runs, () => p.Run(items, budget));
            Measure("ItemList(items) + Dispose", runs, () => new ItemList(items).Dispose());
        }
        using (var slicer = Slicer.Greedy())
        using (var placer = Placer.Chronological())
        using (var list = new ItemList(items))
        using (var budget = new Budget(100000, 50000))
        {
            using (var scorer = Scorer.Custom(its => its.Select(it =>
                       it.Tokens + (it.Kind == "Memory" && it.Tags.Contains("t1") ? 1.0 : 0.0)).ToArray()))
            using (var p = new Pipeline(scorer, slicer, placer))
            {
                Measure("custom scorer, ContextItem copies", runs, () => p.Run(list, budget));
            }
            using (var scorer = Scorer.CustomViews(its =>
                   {
                       var scores = new double[its.Count];
                       for (int i = 0; i < scores.Length; i++)
                       {
                           var v = its[i];
                           scores[i] = v.Tokens + (v.IsKind("Memory") && v.HasTag("t1") ? 1.0 : 0.0);
                       }
                       return scores;
                   }))
            using (var p = new Pipeline(scorer, slicer, placer))
            {
                Measure("custom scorer, views", runs, () => p.Run(list, budget));
            }
        }
    }

    static void Measure(string name, int runs, Action run)
    {
        for (int i = 0; i < 10; i++) run();
        var watch = Stopwatch.StartNew();
        for (int i = 0; i < runs; i++) run();
        Console.WriteLine($"{name,-34} {watch.Elapsed.TotalMilliseconds / runs,8:F3} ms/run ({runs} runs)");
    }
}
