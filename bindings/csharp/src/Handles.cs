// One SafeHandle subclass per handle type. A SafeHandle releases its handle exactly once,
// from Dispose or from its critical finalizer (the safety net when a wrapper is not
// disposed), and P/Invoke keeps it referenced during every call it is passed to.
//
// Components (scorer, slicer, placer) are reference-counted by the library: a composite,
// quota slicer or pipeline built from one keeps its own reference, so releasing the C#
// handle early is always safe.
using System;
using System.Runtime.InteropServices;

namespace Ctxpack
{
    internal abstract class CtxpackHandle : SafeHandle
    {
        protected CtxpackHandle() : base(IntPtr.Zero, true) { }

        public override bool IsInvalid => handle == IntPtr.Zero;

        /// Runs `use` with the raw pointer, for the few arguments the marshaller cannot
        /// pass as a SafeHandle (handles inside struct arrays); the handle stays referenced
        /// until `use` returns.
        internal T WithPointer<T>(Func<IntPtr, T> use)
        {
            bool added = false;
            try
            {
                DangerousAddRef(ref added);
                return use(DangerousGetHandle());
            }
            finally
            {
                if (added) DangerousRelease();
            }
        }
    }

    internal sealed class BudgetHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_budget_free(handle); return true; }
    }

    internal sealed class ItemsHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_items_free(handle); return true; }
    }

    internal sealed class ScorerHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_scorer_free(handle); return true; }
    }

    internal sealed class SlicerHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_slicer_free(handle); return true; }
    }

    internal sealed class PlacerHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_placer_free(handle); return true; }
    }

    internal sealed class PipelineHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_pipeline_free(handle); return true; }
    }

    internal sealed class CancelTokenHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_cancel_token_free(handle); return true; }
    }

    internal sealed class ResultHandle : CtxpackHandle
    {
        /// A handle owning `result`, a result the library returned through a raw pointer.
        internal static ResultHandle Adopt(IntPtr result)
        {
            var owned = new ResultHandle();
            owned.SetHandle(result);
            return owned;
        }

        protected override bool ReleaseHandle() { Native.ctxpack_result_free(handle); return true; }
    }

    internal sealed class SliceResultHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_slice_result_free(handle); return true; }
    }

    internal sealed class PrefixStateHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_prefix_state_free(handle); return true; }
    }

    internal sealed class StringHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_string_free(handle); return true; }
    }

    internal sealed class SensitivityHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_sensitivity_free(handle); return true; }
    }

    internal sealed class QuotaUtilizationHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_quota_utilization_free(handle); return true; }
    }

    internal sealed class ChatResultHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { Native.ctxpack_chat_result_free(handle); return true; }
    }
}
