// Runs into one kept library result (ctxpack_pipeline_run_descs_into).
using System;
using System.Collections.Generic;

namespace Ctxpack
{
    /// <summary>Runs pipelines over items into one library result that it keeps between runs
    /// (the library's <c>ctxpack_pipeline_run_descs_into</c>): once that result has grown to a
    /// run's size, the library allocates nothing for the run (docs/ffi.md, "Reusing a result").
    /// Each <see cref="Run"/> returns its <see cref="RunResult"/> copied out, exactly as
    /// <c>Pipeline.Run</c> over items does, so a result stays valid after later runs. Keep one
    /// Runner per thread (or worker): calls on one Runner are serialised. <see cref="Dispose"/>
    /// frees the kept result (the Runner may be used again after it).</summary>
    public sealed class Runner : IDisposable
    {
        readonly object gate = new object();
        // The kept result; null before the first successful run and after Dispose.
        ResultHandle kept;

        /// <summary><c>pipeline.Run(items, budget, trace)</c>, run into the kept result.</summary>
        public RunResult Run(Pipeline pipeline, IReadOnlyList<ContextItem> items, Budget budget,
            TraceDetail trace = TraceDetail.None)
        {
            Arg.NotNull(pipeline, nameof(pipeline));
            Arg.NotNull(items, nameof(items));
            Arg.NotNull(budget, nameof(budget));
            var options = Pipeline.RunOptionsOf(trace);
            lock (gate)
            using (var arena = new NativeArena())
            {
                var descs = items.Count == 0 ? IntPtr.Zero : ContextItem.Descriptors(arena, items);
                IntPtr earlier = kept == null ? IntPtr.Zero : kept.DangerousGetHandle();
                IntPtr result = earlier;
                Errors.Check(Native.ctxpack_pipeline_run_descs_into(pipeline.Handle, descs, (UIntPtr)items.Count,
                    budget.Handle, ref options, ref result, out var error), error);
                if (result != earlier)
                {
                    // A new result: the library released the earlier one, so its handle must not.
                    kept?.SetHandleAsInvalid();
                    kept = ResultHandle.Adopt(result);
                }
                return RunResult.Read(kept);
            }
        }

        /// <summary>Frees the kept result. Disposing twice is safe.</summary>
        public void Dispose()
        {
            lock (gate)
            {
                kept?.Dispose();
                kept = null;
            }
        }
    }
}
