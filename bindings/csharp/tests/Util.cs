using System;
using System.Collections.Generic;

namespace Ctxpack.Tests
{
    static class Util
    {
        public static readonly DateTimeOffset Jan2024 = new DateTimeOffset(2024, 1, 1, 0, 0, 0, TimeSpan.Zero);

        /// An item with a timestamp `day` days after 2024-01-01.
        public static ContextItem Day(string content, long tokens, int day) =>
            new ContextItem(content, tokens) { Timestamp = Jan2024.AddDays(day) };

        /// A pipeline with greedy slicing and chronological placement around scorer.
        public static Pipeline Pipeline(Scorer scorer, bool deduplication = true, OverflowStrategy overflow = OverflowStrategy.Throw)
        {
            using (var slicer = Slicer.Greedy())
            using (var placer = Placer.Chronological())
            {
                return new Pipeline(scorer, slicer, placer, deduplication, overflow);
            }
        }

        /// Runs items through a recency/greedy/chronological pipeline.
        public static RunResult RunRecency(IReadOnlyList<ContextItem> items, long max, long target,
            OverflowStrategy overflow = OverflowStrategy.Throw, TraceDetail trace = TraceDetail.None)
        {
            using (var recency = Scorer.Recency())
            using (var pipeline = Pipeline(recency, true, overflow))
            using (var budget = new Budget(max, target))
            {
                return pipeline.Run(items, budget, trace);
            }
        }
    }
}
