// Policy and budget JSON with reading options (docs/policy-json.md): lenient or strict
// reading with the warnings of a lenient read, host scorers registered under type names,
// and the JSON form of budgets.
using System;
using System.Collections.Generic;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.InteropServices;

namespace Ctxpack
{
    /// <summary>What a lenient read of policy or budget JSON did instead of failing.</summary>
    public enum JsonWarningKind
    {
        /// <summary>A property this version does not know (or a wrongly-cased name) was ignored.</summary>
        UnknownProperty = 1,
        /// <summary>A scorer entry without "type" was read as "recency", as .NET reads it.</summary>
        MissingScorerType = 2,
        /// <summary>A "kindWeights" or "reservedSlots" key repeated an earlier kind with other
        /// letter case; the last value was kept under the first spelling.</summary>
        RepeatedKind = 3,
        /// <summary>A budget without "maxTokens" or "targetTokens" had it read as 0.</summary>
        MissingBudgetField = 4,
    }

    /// <summary>One warning of a lenient read.</summary>
    public sealed class JsonWarning
    {
        internal JsonWarning(JsonWarningKind kind, string path, string message, string text)
        {
            Kind = kind;
            Path = path;
            Message = message;
            Text = text;
        }

        /// <summary>What the reader did.</summary>
        public JsonWarningKind Kind { get; }

        /// <summary>The JSON path concerned ("scorers[0].wieght"; "$" for the document).</summary>
        public string Path { get; }

        /// <summary>What the reader did, in words ("unknown property; ignored").</summary>
        public string Message { get; }

        /// <summary>Path, ": " and Message: the line to show a user.</summary>
        public string Text { get; }

        /// <summary>The warning's Text.</summary>
        public override string ToString() => Text;
    }

    /// <summary>How Pipeline.FromPolicyJson and Budget.FromJson read their document. The
    /// defaults read leniently, with the built-in scorer types only.</summary>
    public sealed class JsonReadOptions
    {
        /// <summary>Each case a lenient read reports as a warning is an error instead
        /// (Status.InvalidPolicy, or Status.InvalidBudget for a budget).</summary>
        public bool Strict { get; set; }

        /// <summary>The host scorer types a policy may name (null: only the built-in types).
        /// Budgets ignore it.</summary>
        [AllowNull, MaybeNull] public ScorerRegistry Registry { get; set; }
    }

    /// <summary>Host scorers registered under type names, so that a policy entry
    /// {"type": "&lt;name&gt;", "weight": w} runs them. Names compare ASCII
    /// case-insensitively; registering a name again replaces the earlier scorer. Thread-safe,
    /// Register included.</summary>
    public sealed class ScorerRegistry : IDisposable
    {
        internal readonly ScorerRegistryHandle Handle;

        /// <summary>An empty registry.</summary>
        public ScorerRegistry()
        {
            Handle = Component.Create((out ScorerRegistryHandle h, out IntPtr e) => NativePolicyJson.ctxpack_scorer_registry_new(out h, out e));
        }

        /// <summary>Frees the registry. Pipelines built from policies naming its scorers keep
        /// their own references to them.</summary>
        public void Dispose() => Handle.Dispose();

        /// <summary>Registers scorer (a custom one from Scorer.Custom, or a built-in one)
        /// under the type name name. The registry keeps its own reference, so the scorer may
        /// be disposed afterwards. A blank name or the name of a built-in scorer type
        /// ("recency", ..., "metadataKey", any case) is Status.InvalidArgument.</summary>
        public void Register(string name, Scorer scorer)
        {
            using (var arena = new NativeArena())
            {
                var s = arena.Str(Arg.NotNull(name, nameof(name)));
                Errors.Check(NativePolicyJson.ctxpack_scorer_registry_add(Handle, s, Arg.NotNull(scorer, nameof(scorer)).Handle, out var error), error);
            }
        }

        /// <summary>Registers a scorer written in C# (see Scorer.Custom) under the type name
        /// name. The delegate lives until the registry and every pipeline built from a policy
        /// naming it are disposed.</summary>
        public void Register(string name, ScoreFunction score)
        {
            using (var scorer = Scorer.Custom(score)) Register(name, scorer);
        }

        /// <summary>Registers a scorer written in C# over item views (see Scorer.CustomViews)
        /// under the type name name, kept alive as the Register overload taking a
        /// ScoreFunction.</summary>
        public void RegisterViews(string name, ScoreViewFunction score)
        {
            using (var scorer = Scorer.CustomViews(score)) Register(name, scorer);
        }

        /// <summary>The registered names, in registration order.</summary>
        public IReadOnlyList<string> Names
        {
            get
            {
                Errors.Check(NativePolicyJson.ctxpack_scorer_registry_count(Handle, out var count));
                var names = new List<string>();
                for (ulong i = 0; i < count.ToUInt64(); i++)
                {
                    Errors.Check(NativePolicyJson.ctxpack_scorer_registry_name(Handle, (UIntPtr)i, out var name));
                    names.Add(Native.ToManaged(name));
                }
                return names;
            }
        }
    }

    public sealed partial class Pipeline
    {
        /// <summary>A pipeline from a policy in its JSON form, read with options (null: lenient,
        /// built-in scorer types only); warnings receives what a lenient read reported (empty
        /// for a clean document). Errors are those of FromPolicyJson(string); in strict mode
        /// each warning case is Status.InvalidPolicy instead. An unknown scorer type's message
        /// lists the built-in and then the registered names.</summary>
        public static Pipeline FromPolicyJson(string json, [AllowNull] JsonReadOptions options, out IReadOnlyList<JsonWarning> warnings)
        {
            using (var arena = new NativeArena())
            using (var refs = new HandleRefs())
            {
                var s = arena.Str(Arg.NotNull(json, nameof(json)));
                var o = PolicyJsonSupport.Options(options, refs);
                JsonWarningsHandle w = null;
                var handle = Component.Create((out PipelineHandle h, out IntPtr e) =>
                    NativePolicyJson.ctxpack_pipeline_new_policy_json_with(s, ref o, out h, out w, out e));
                warnings = PolicyJsonSupport.TakeWarnings(w, handle);
                return new Pipeline(handle);
            }
        }
    }

    public sealed partial class Budget
    {
        Budget(BudgetHandle handle) { Handle = handle; }

        /// <summary>A budget from the JSON form of the .NET library ("maxTokens",
        /// "targetTokens", "outputReserve", "reservedSlots", "estimationSafetyMarginPercent"),
        /// read with options (null: lenient; the registry is not used); warnings receives what
        /// a lenient read reported. Every failure is Status.InvalidBudget, with a message that
        /// starts with the JSON path.</summary>
        public static Budget FromJson(string json, [AllowNull] JsonReadOptions options, out IReadOnlyList<JsonWarning> warnings)
        {
            using (var arena = new NativeArena())
            {
                var s = arena.Str(Arg.NotNull(json, nameof(json)));
                var o = PolicyJsonSupport.Options(new JsonReadOptions { Strict = options?.Strict ?? false }, null);
                JsonWarningsHandle w = null;
                var handle = Component.Create((out BudgetHandle h, out IntPtr e) =>
                    NativePolicyJson.ctxpack_budget_new_json(s, ref o, out h, out w, out e));
                warnings = PolicyJsonSupport.TakeWarnings(w, handle);
                return new Budget(handle);
            }
        }

        /// <summary>A budget from its JSON form, read leniently; the warnings are dropped.</summary>
        public static Budget FromJson(string json) => FromJson(json, null, out _);

        /// <summary>The budget in the JSON form of the .NET library, byte for byte what .NET
        /// writes: compact, or indented by two spaces.</summary>
        public string ToJson(bool pretty = false)
        {
            Errors.Check(NativePolicyJson.ctxpack_budget_json(Handle, pretty, out var json, out var error), error);
            using (json)
            {
                Errors.Check(Native.ctxpack_string_value(json, out var value));
                return Native.ToManaged(value);
            }
        }
    }

    internal static class PolicyJsonSupport
    {
        /// The C options of `options`; the registry's handle stays referenced by `refs`
        /// while its raw pointer is in the struct.
        internal static Native.JsonReadOptions Options(JsonReadOptions options, HandleRefs refs)
        {
            var o = new Native.JsonReadOptions();
            Errors.Check(NativePolicyJson.ctxpack_json_read_options_init(ref o, Native.Size<Native.JsonReadOptions>()));
            o.Strict = options != null && options.Strict ? (byte)1 : (byte)0;
            if (options?.Registry != null) o.Registry = refs.Add(options.Registry.Handle);
            return o;
        }

        /// The warnings of a read that made `created`, and the warnings handle disposed; if
        /// reading them fails, `created` is disposed too before the exception propagates.
        internal static IReadOnlyList<JsonWarning> TakeWarnings(JsonWarningsHandle warnings, SafeHandle created)
        {
            using (warnings)
            {
                try
                {
                    return Read(warnings);
                }
                catch
                {
                    created.Dispose();
                    throw;
                }
            }
        }

        /// The warnings of a handle (none for a NULL one).
        internal static IReadOnlyList<JsonWarning> Read(JsonWarningsHandle handle)
        {
            var list = new List<JsonWarning>();
            if (handle == null || handle.IsInvalid) return list;
            Errors.Check(NativePolicyJson.ctxpack_json_warnings_count(handle, out var count));
            for (ulong i = 0; i < count.ToUInt64(); i++)
            {
                var w = new Native.JsonWarning();
                Errors.Check(NativePolicyJson.ctxpack_json_warning_init(ref w, Native.Size<Native.JsonWarning>()));
                Errors.Check(NativePolicyJson.ctxpack_json_warnings_entry(handle, (UIntPtr)i, ref w, out var error), error);
                list.Add(new JsonWarning((JsonWarningKind)w.Kind, Native.ToManaged(w.Path), Native.ToManaged(w.Message), Native.ToManaged(w.Text)));
            }
            return list;
        }
    }

    internal sealed class ScorerRegistryHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { NativePolicyJson.ctxpack_scorer_registry_free(handle); return true; }
    }

    internal sealed class JsonWarningsHandle : CtxpackHandle
    {
        protected override bool ReleaseHandle() { NativePolicyJson.ctxpack_json_warnings_free(handle); return true; }
    }

    /// The C functions of the JSON reading options, registries and budget JSON (the
    /// structs are in Native, with the others, for the layout check).
    internal static partial class NativePolicyJson
    {
        const string Lib = Native.Lib;

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_registry_new(out ScorerRegistryHandle registry, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_registry_add(ScorerRegistryHandle registry, Native.Str name, ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_registry_count(ScorerRegistryHandle registry, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_registry_name(ScorerRegistryHandle registry, UIntPtr index, out Native.Str name);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_scorer_registry_free(IntPtr registry);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_json_read_options_init(ref Native.JsonReadOptions options, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_json_warning_init(ref Native.JsonWarning warning, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_json_warnings_count(JsonWarningsHandle warnings, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_json_warnings_entry(JsonWarningsHandle warnings, UIntPtr index, ref Native.JsonWarning warning,
            out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_json_warnings_free(IntPtr warnings);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_new_policy_json_with(Native.Str json, ref Native.JsonReadOptions options,
            out PipelineHandle pipeline, out JsonWarningsHandle warnings, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_budget_new_json(Native.Str json, ref Native.JsonReadOptions options, out BudgetHandle budget,
            out JsonWarningsHandle warnings, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_budget_json(BudgetHandle budget, [MarshalAs(UnmanagedType.U1)] bool pretty, out StringHandle json,
            out IntPtr error);
    }
}
