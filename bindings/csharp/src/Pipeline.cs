using System;
using System.Collections.Generic;

namespace Ctxpack
{
    /// <summary>What a run does when the selection exceeds the target.</summary>
    public enum OverflowStrategy { Throw = 0, Truncate = 1, Proceed = 2 }

    /// <summary>How much a run records for its report.</summary>
    public enum TraceDetail { None = 0, Stage = 1, Item = 2 }

    /// <summary>A configured scorer, slicer and placer. Immutable; may be run from many threads
    /// at once (custom components must then be thread-safe).</summary>
    public sealed class Pipeline : IDisposable
    {
        internal readonly PipelineHandle Handle;

        /// <summary>Builds a pipeline; it keeps its own references to the components, which
        /// may be disposed afterwards. Deduplication removes byte-identical contents.</summary>
        public Pipeline(Scorer scorer, Slicer slicer, Placer placer, bool deduplication = true,
            OverflowStrategy overflow = OverflowStrategy.Throw)
        {
            var options = new Native.PipelineOptions
            {
                StructSize = Native.Size<Native.PipelineOptions>(),
                Deduplication = deduplication ? (byte)1 : (byte)0,
                OverflowStrategy = (int)overflow,
            };
            Handle = Component.Create((out PipelineHandle h, out IntPtr e) =>
                Native.ctxpack_pipeline_new(Arg.NotNull(scorer, nameof(scorer)).Handle, Arg.NotNull(slicer, nameof(slicer)).Handle,
                    Arg.NotNull(placer, nameof(placer)).Handle, ref options, out h, out e));
        }

        public void Dispose() => Handle.Dispose();

        /// <summary>Runs the pipeline over items within budget (the items are copied into a
        /// temporary list; see the ItemList overload). Thread-safe.</summary>
        public RunResult Run(IReadOnlyList<ContextItem> items, Budget budget, TraceDetail trace = TraceDetail.None)
        {
            using (var list = new ItemList(Arg.NotNull(items, nameof(items))))
            {
                return Run(list, budget, trace);
            }
        }

        /// <summary>Runs the pipeline over an item list; result indices are positions in it.
        /// Thread-safe as long as nobody pushes to or clears the list meanwhile.</summary>
        public RunResult Run(ItemList items, Budget budget, TraceDetail trace = TraceDetail.None)
        {
            // No overflow callback: the event is in RunResult.Overflow.
            var options = new Native.RunOptions { StructSize = Native.Size<Native.RunOptions>(), TraceDetail = (int)trace };
            Errors.Check(Native.ctxpack_pipeline_run(Handle, Arg.NotNull(items, nameof(items)).Handle,
                Arg.NotNull(budget, nameof(budget)).Handle, ref options, out var result, out var error), error);
            using (result)
            {
                return RunResult.Read(result);
            }
        }
    }
}
