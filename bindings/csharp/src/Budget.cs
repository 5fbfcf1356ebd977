using System;
using System.Collections.Generic;
using System.Linq;

namespace Ctxpack
{
    /// <summary>A validated token budget. Immutable; may be shared by concurrent runs.</summary>
    public sealed partial class Budget : IDisposable
    {
        internal readonly BudgetHandle Handle;

        /// <summary>A budget of maxTokens (the model's window) aiming at targetTokens, keeping
        /// outputReserve tokens for the answer, with tokens reserved per kind (kinds compare
        /// ASCII case-insensitively and must be distinct) and an estimation safety margin in
        /// percent. The library validates it (Status.InvalidBudget).</summary>
        public unsafe Budget(long maxTokens, long targetTokens, long outputReserve = 0,
            IEnumerable<KeyValuePair<string, long>> reservedSlots = null, double safetyMarginPercent = 0)
        {
            var slots = (reservedSlots ?? Enumerable.Empty<KeyValuePair<string, long>>()).ToList();
            using (var arena = new NativeArena())
            {
                var array = (Native.ReservedSlot*)arena.Array<Native.ReservedSlot>(slots.Count);
                for (int i = 0; i < slots.Count; i++)
                {
                    array[i] = new Native.ReservedSlot { Kind = arena.Str(slots[i].Key), Count = slots[i].Value };
                }
                var desc = new Native.BudgetDesc();
                Native.ctxpack_budget_desc_init(ref desc, Native.Size<Native.BudgetDesc>());
                desc.MaxTokens = maxTokens;
                desc.TargetTokens = targetTokens;
                desc.OutputReserve = outputReserve;
                desc.Slots = (IntPtr)array;
                desc.SlotCount = (UIntPtr)slots.Count;
                desc.EstimationSafetyMarginPercent = safetyMarginPercent;
                Handle = Component.Create((out BudgetHandle h, out IntPtr e) => Native.ctxpack_budget_new(ref desc, out h, out e));
            }
        }

        public void Dispose() => Handle.Dispose();
    }

    /// Helpers shared by the wrappers of library objects.
    internal static class Component
    {
        internal delegate int Constructor<THandle>(out THandle handle, out IntPtr error);

        /// Runs a constructor and returns the handle it created, or throws its error.
        internal static THandle Create<THandle>(Constructor<THandle> construct) where THandle : CtxpackHandle
        {
            int status = construct(out var handle, out var error);
            if (status != 0) handle?.Dispose(); // NULL on failure; disposing it is a no-op
            Errors.Check(status, error);
            return handle;
        }
    }

    /// Keeps several handles referenced while their raw pointers sit in a struct array
    /// passed to the library (composite children).
    internal sealed class HandleRefs : IDisposable
    {
        readonly List<CtxpackHandle> added = new List<CtxpackHandle>();

        internal IntPtr Add(CtxpackHandle h)
        {
            bool ok = false;
            h.DangerousAddRef(ref ok);
            if (ok) added.Add(h);
            return h.DangerousGetHandle();
        }

        public void Dispose()
        {
            foreach (var h in added) h.DangerousRelease();
            added.Clear();
        }
    }
}
