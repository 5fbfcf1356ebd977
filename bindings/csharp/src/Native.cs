// The C ABI of libctxpack (include/ctxpack.h; rules in docs/ffi.md) as P/Invoke
// declarations. Everything here is internal: the public API wraps it.
//
// Layout rules:
// * structs are blittable and sequential, so they match the C layout on every platform
//   the library supports (tests/layout.c and LayoutTests check each offset and size);
// * a flag field (a caller-written uint8_t or a library-written C `bool`) is a `byte`
//   (0 or 1); a `uint8_t` flag or `bool` out-parameter is marshalled as UnmanagedType.U1;
// * a `reserved` array is a fixed buffer (the structs that contain one are `unsafe`), left
//   zero by the struct's ctxpack_<struct>_init function, which every versioned struct
//   goes through before its fields are set;
// * size_t is UIntPtr, pointers are IntPtr, int64_t is long, int32_t enums are int;
// * handles are SafeHandle subclasses (Handles.cs): the marshaller keeps a handle
//   referenced for the duration of each call, so a concurrent Dispose or the finalizer
//   cannot free it while the library uses it.
//
// Imports: every function is a [DllImport] extern with the C calling convention spelled
// out, on every target. [LibraryImport] (source-generated marshalling, .NET 7 and later) is
// not used: no .NET SDK is available where this binding is built and tested, and a second,
// never-compiled declaration of every import would be a build break waiting for .NET users
// (bindings/csharp/README.md, "Handles and marshalling").
using System;
using System.Runtime.InteropServices;

namespace Ctxpack
{
    internal static partial class Native
    {
        internal const string Lib = "ctxpack";

        [StructLayout(LayoutKind.Sequential)]
        internal struct Str
        {
            public IntPtr Ptr;
            public UIntPtr Len;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct ReservedSlot
        {
            public Str Kind;
            public long Count;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct MetadataEntry
        {
            public Str Key;
            public Str Value;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal unsafe struct ItemDesc
        {
            public UIntPtr StructSize;
            public Str Content;
            public Str Kind;
            public Str Source;
            public IntPtr Tags;
            public UIntPtr TagCount;
            public IntPtr Metadata;
            public UIntPtr MetadataCount;
            public long Tokens;
            public long Priority;
            public long TimestampNs;
            public double FutureRelevanceHint;
            public long OriginalTokens;
            public byte Pinned;
            public byte HasPriority;
            public byte HasTimestamp;
            public byte HasFutureRelevanceHint;
            public byte HasOriginalTokens;
            public fixed byte Reserved[3];
            public Str Group;
            public Str Encoding;
            public IntPtr Variants;
            public UIntPtr VariantCount;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct BudgetDesc
        {
            public UIntPtr StructSize;
            public long MaxTokens;
            public long TargetTokens;
            public long OutputReserve;
            public IntPtr Slots;
            public UIntPtr SlotCount;
            public double EstimationSafetyMarginPercent;
        }

        // The view a callback receives (its layout is frozen for 0.x).
        [StructLayout(LayoutKind.Sequential)]
        internal struct ItemView
        {
            public Str Content;
            public long Tokens;
            public Str Kind;
            public Str Source;
            public long Priority;
            public byte HasPriority;
            public IntPtr Tags;
            public UIntPtr TagCount;
            public IntPtr Metadata;
            public UIntPtr MetadataCount;
            public long TimestampNs;
            public byte HasTimestamp;
            public double FutureRelevanceHint;
            public byte HasFutureRelevanceHint;
            public byte Pinned;
            public long OriginalTokens;
            public byte HasOriginalTokens;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal unsafe struct PipelineOptions
        {
            public UIntPtr StructSize;
            public int OverflowStrategy;
            public byte Deduplication;
            public byte NoVariants;
            public fixed byte Reserved[2];
            public int GroupValue;
            public byte PinnedFirst;
            public fixed byte Reserved2[3];
        }

        [StructLayout(LayoutKind.Sequential)]
        internal unsafe struct RunOptions
        {
            public UIntPtr StructSize;
            public IntPtr OnOverflow;
            public IntPtr OverflowUserData;
            public int TraceDetail;
            public fixed byte Reserved[4];
            public IntPtr Cancel;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal unsafe struct PrefixOptions
        {
            public UIntPtr StructSize;
            public int Mode;
            public byte CustomThresholds;
            public fixed byte Reserved[3];
            public double MaxValueLoss;
            public double LowWatermark;
            public Str Conversation;
            public Str CacheRule;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal unsafe struct PrefixReuse
        {
            public UIntPtr StructSize;
            public int Mode;
            public int Outcome;
            public ulong Turn;
            public ulong TurnsSinceAnchor;
            public UIntPtr PreviousEntries;
            public long PreviousTokens;
            public UIntPtr WindowEntries;
            public long WindowTokens;
            public UIntPtr KeptEntries;
            public long KeptTokens;
            public long CachedTokens;
            public long AnchorTarget;
            public double FreshValue;
            public double Value;
            public double ValueGivenUp;
            public byte HasDifference;
            public fixed byte Reserved[3];
            public int DifferenceReason;
            public UIntPtr DifferenceIndex;
            public UIntPtr DifferenceItem;
            public uint DifferencePreviousPosition;
            public fixed byte Reserved2[4];
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct CallbackError
        {
            public Str Message;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct ReportSummary
        {
            public UIntPtr StructSize;
            public UIntPtr IncludedCount;
            public UIntPtr ExcludedCount;
            public UIntPtr EventCount;
            public UIntPtr ShortfallCount;
            public UIntPtr TotalCandidates;
            public long TotalTokensConsidered;
            public byte TotalTokensSaturated;
            public UIntPtr GroupCount;
            public UIntPtr PrunedFormCount;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct IncludedEntry
        {
            public UIntPtr StructSize;
            public UIntPtr Index;
            public double Score;
            public int Reason;
            public UIntPtr Form;
            public long FullTokens;
            public long ChosenTokens;
            public long AvailableTokens;
            public int Cause;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct PrunedForm
        {
            public UIntPtr StructSize;
            public UIntPtr Index;
            public UIntPtr Form;
            public UIntPtr DominatedBy;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct VariantDesc
        {
            public UIntPtr StructSize;
            public Str Content;
            public long Tokens;
            public double Quality;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct ExcludedEntry
        {
            public UIntPtr StructSize;
            public UIntPtr Index;
            public double Score;
            public int Reason;
            public Str Name;
            public long ItemTokens;
            public long AvailableTokens;
            public double ReasonScore;
            public double Threshold;
            public Str DeduplicatedAgainst;
            public Str Kind;
            public long Cap;
            public long Actual;
            public Str DisplacedByKind;
            public long Tokens;
            public Str DisplacedBy;
            public Str FilterName;
            public ulong CountCap;
            public ulong Count;
            public Str Group;
            public UIntPtr MemberIndex;
            public Str MemberContent;
            public Str MemberReason;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct GroupEntry
        {
            public UIntPtr StructSize;
            public Str Key;
            public IntPtr Members;
            public UIntPtr MemberCount;
            public long Tokens;
            public double Value;
            public UIntPtr MemberIndex;
            public UIntPtr PinnedBy;
            public int Decision;
            public int Stage;
            public byte HasValue;
            public byte HasPinnedBy;
            public byte PartialSelection;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct TraceEvent
        {
            public UIntPtr StructSize;
            public int Stage;
            public double DurationMs;
            public UIntPtr ItemCount;
            public Str Message;
            public byte HasMessage;
            public UIntPtr ItemIndex;
            public byte HasItemIndex;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct Shortfall
        {
            public UIntPtr StructSize;
            public Str Kind;
            public ulong RequiredCount;
            public ulong SatisfiedCount;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct KindWeight
        {
            public Str Kind;
            public double Weight;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct TagWeight
        {
            public Str Tag;
            public double Weight;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct CompositeChild
        {
            public IntPtr Scorer;
            public double Weight;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct DecayWindow
        {
            public long MaxAgeNs;
            public double Score;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal unsafe struct DecayConfig
        {
            public UIntPtr StructSize;
            public long HalfLifeNs;
            public long MaxAgeNs;
            public IntPtr Windows;
            public UIntPtr WindowCount;
            public long FixedNowNs;
            public double NullTimestampScore;
            public int Curve;
            public int Clock;
            public byte HasNullTimestampScore;
            public fixed byte Reserved[7];
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct QuotaEntry
        {
            public Str Kind;
            public double Require;
            public double Cap;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct CountQuotaEntry
        {
            public Str Kind;
            public UIntPtr RequireCount;
            public UIntPtr CapCount;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct KindQuotaUtilization
        {
            public UIntPtr StructSize;
            public Str Kind;
            public int Mode;
            public double Require;
            public double Cap;
            public double Actual;
            public double Utilization;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct SensitivityVariant
        {
            public Str Label;
            public IntPtr Pipeline;
        }

        // The JSON read options and warnings (their functions are declared in
        // PolicyJson.cs, NativePolicyJson), kept here with the other structs so that their
        // layout is checked with the rest (LayoutTests).
        [StructLayout(LayoutKind.Sequential)]
        internal unsafe struct JsonReadOptions
        {
            public UIntPtr StructSize;
            public IntPtr Registry;
            public byte Strict;
            public fixed byte Reserved[7];
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct JsonWarning
        {
            public UIntPtr StructSize;
            public int Kind;
            public Str Path;
            public Str Message;
            public Str Text;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal unsafe struct ChatOptions
        {
            public UIntPtr StructSize;
            public Str Encoding;
            public long OverheadPerMessage;
            public long OverheadPerName;
            public long OverheadPerRequest;
            public long OverheadMedia;
            public int TraceDetail;
            public byte UnpinLastTurn;
            public byte HasOverheads;
            public fixed byte Reserved[2];
            public IntPtr Prefix;        // const ctxpack_prefix_options*
            public IntPtr PreviousState; // const ctxpack_prefix_state*
            public IntPtr Cancel;        // const ctxpack_cancel_token*
            public ulong ShortenHeadTokens;
            public ulong ShortenTailTokens;
            public double ShortenQuality;
            public Str ShortenMarker;
        }

        // Callbacks (Callbacks.cs). Pointers to views, scores and outputs are IntPtr and
        // read with unsafe code during the call.
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate int ScoreAllFn(IntPtr userData, IntPtr items, UIntPtr count, IntPtr outScores, IntPtr error);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate int SliceFn(IntPtr userData, IntPtr items, IntPtr scores, UIntPtr count, long targetTokens,
            long maxTokens, IntPtr outPositions, IntPtr outCount, IntPtr error);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate int PlaceFn(IntPtr userData, IntPtr items, IntPtr scores, UIntPtr count, IntPtr outOrder, IntPtr error);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate void DestroyFn(IntPtr userData);

        // ---- general

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr ctxpack_version();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern uint ctxpack_version_number();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr ctxpack_status_name(int status);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_error_code(IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern Str ctxpack_error_message(IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_error_free(IntPtr error);

        // ---- budget and items

        // The initialisers of the versioned structs: every byte zero, struct_size = size.
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_item_desc_init(IntPtr desc, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_budget_desc_init(ref BudgetDesc desc, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_options_init(ref PipelineOptions options, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_run_options_init(ref RunOptions options, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_decay_config_init(IntPtr config, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_report_summary_init(ref ReportSummary summary, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_included_entry_init(ref IncludedEntry entry, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_excluded_entry_init(ref ExcludedEntry entry, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_trace_event_init(ref TraceEvent ev, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_shortfall_init(ref Shortfall shortfall, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_group_entry_init(ref GroupEntry entry, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pruned_form_init(ref PrunedForm form, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_variant_desc_init(IntPtr desc, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_kind_quota_utilization_init(ref KindQuotaUtilization entry, UIntPtr size);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_budget_new(ref BudgetDesc desc, out BudgetHandle budget, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_budget_free(IntPtr budget);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_items_new(out ItemsHandle items, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_items_push_many(ItemsHandle items, IntPtr descs, UIntPtr count, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_items_len(ItemsHandle items, out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_items_clear(ItemsHandle items);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_items_free(IntPtr items);

        // ---- scorers

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_kind(out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_kind_weights(IntPtr weights, UIntPtr count, out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_tag(IntPtr weights, UIntPtr count, out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_composite(IntPtr children, UIntPtr count, out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_scaled(ScorerHandle inner, out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_decay(IntPtr config, out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_metadata_trust(double defaultScore, out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_metadata_key(Str key, Str value, double boost, out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_recency(out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_priority(out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_frequency(out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_reflexive(out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_new_custom_batch(ScoreAllFn scoreAll, IntPtr userData, DestroyFn destroy,
            out ScorerHandle scorer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_scorer_free(IntPtr scorer);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_scorer_score(ScorerHandle scorer, ItemsHandle items, [Out] double[] scores,
            UIntPtr capacity, out IntPtr error);

        // ---- slicers

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slicer_new_greedy(out SlicerHandle slicer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slicer_new_knapsack(long bucketSize, ulong tableLimitBytes, out SlicerHandle slicer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slicer_new_quota(IntPtr entries, UIntPtr count, SlicerHandle inner,
            out SlicerHandle slicer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slicer_new_count_quota(IntPtr entries, UIntPtr count, SlicerHandle inner,
            int scarcity, out SlicerHandle slicer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slicer_new_count_constrained_knapsack(IntPtr entries, UIntPtr count,
            long bucketSize, ulong tableLimitBytes, int scarcity, out SlicerHandle slicer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slicer_new_custom(SliceFn slice, IntPtr userData, DestroyFn destroy,
            out SlicerHandle slicer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_slicer_free(IntPtr slicer);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slicer_slice(SlicerHandle slicer, ItemsHandle items, double[] scores,
            UIntPtr count, BudgetHandle budget, out SliceResultHandle result, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slicer_slice_with_group_value(SlicerHandle slicer, ItemsHandle items, double[] scores,
            UIntPtr count, BudgetHandle budget, int groupValue, out SliceResultHandle result, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slice_result_selected(SliceResultHandle result, out IntPtr ptr, out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slice_result_cap_excluded(SliceResultHandle result, out IntPtr ptr, out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slice_result_shortfall_count(SliceResultHandle result, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_slice_result_shortfall(SliceResultHandle result, UIntPtr i, ref Shortfall shortfall,
            out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_slice_result_free(IntPtr result);

        // ---- placers

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_placer_new_chronological(out PlacerHandle placer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_placer_new_u_shaped(out PlacerHandle placer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_placer_new_custom(PlaceFn place, IntPtr userData, DestroyFn destroy,
            out PlacerHandle placer, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_placer_free(IntPtr placer);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_placer_place(PlacerHandle placer, ItemsHandle items, double[] scores,
            UIntPtr count, [Out] UIntPtr[] order, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_placer_place_with_group_value(PlacerHandle placer, ItemsHandle items, double[] scores,
            UIntPtr count, int groupValue, [Out] UIntPtr[] order, out IntPtr error);

        // ---- pipeline and result

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_new(ScorerHandle scorer, SlicerHandle slicer, PlacerHandle placer,
            ref PipelineOptions options, out PipelineHandle pipeline, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_run(PipelineHandle pipeline, ItemsHandle items, BudgetHandle budget,
            ref RunOptions options, out ResultHandle result, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_run_descs(PipelineHandle pipeline, IntPtr descs, UIntPtr count,
            BudgetHandle budget, ref RunOptions options, out ResultHandle result, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_run_descs_into(PipelineHandle pipeline, IntPtr descs, UIntPtr count,
            BudgetHandle budget, ref RunOptions options, ref IntPtr result, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_release_memory(PipelineHandle pipeline);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_pipeline_free(IntPtr pipeline);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_cancel_token_new(out CancelTokenHandle token, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_cancel_token_cancel(CancelTokenHandle token);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_cancel_token_free(IntPtr token);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_indices(ResultHandle result, out IntPtr ptr, out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_forms(ResultHandle result, out IntPtr ptr, out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_report_pruned_form(ResultHandle result, UIntPtr i, ref PrunedForm form,
            out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_scores(ResultHandle result, out IntPtr ptr, out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_reasons(ResultHandle result, out IntPtr ptr, out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_overflow(ResultHandle result, [MarshalAs(UnmanagedType.U1)] out bool present,
            out long tokensOverBudget, out IntPtr items, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_has_report(ResultHandle result, [MarshalAs(UnmanagedType.U1)] out bool hasReport);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_report_summary(ResultHandle result, ref ReportSummary summary, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_report_included(ResultHandle result, UIntPtr i, ref IncludedEntry entry,
            out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_report_excluded(ResultHandle result, UIntPtr i, ref ExcludedEntry entry,
            out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_report_event(ResultHandle result, UIntPtr i, ref TraceEvent ev, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_report_shortfall(ResultHandle result, UIntPtr i, ref Shortfall shortfall,
            out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_report_group(ResultHandle result, UIntPtr i, ref GroupEntry entry,
            out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_report_json(ResultHandle result, out Str json);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_result_free(IntPtr result);

        // ---- policies

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern UIntPtr ctxpack_preset_count();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_preset_name(UIntPtr index, out Str name);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_new_preset(Str name, out PipelineHandle pipeline, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_new_policy_json(Str json, out PipelineHandle pipeline, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_policy_json(PipelineHandle pipeline, [MarshalAs(UnmanagedType.U1)] bool pretty,
            out StringHandle json, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_string_value(StringHandle s, out Str value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_prefix_options_init(ref PrefixOptions o, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_prefix_reuse_init(ref PrefixReuse r, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_run_prefix(PipelineHandle pipeline, ItemsHandle items, BudgetHandle budget,
            ref RunOptions runOptions, ref PrefixOptions prefixOptions, IntPtr previous, out ResultHandle result,
            out PrefixStateHandle state, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_prefix_reuse(ResultHandle result, ref PrefixReuse reuse, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_prefix_reuse_json(ResultHandle result, out StringHandle json, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_prefix_reuse(ChatResultHandle result, ref PrefixReuse reuse, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_prefix_reuse_json(ChatResultHandle result, out StringHandle json, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_prefix_state(ChatResultHandle result, out PrefixStateHandle state, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_prefix_state_from_bytes(byte[] bytes, UIntPtr len, out PrefixStateHandle state, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_prefix_state_from_json(Str json, out PrefixStateHandle state, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_prefix_state_to_bytes(PrefixStateHandle state, byte[] buffer, UIntPtr capacity, out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_prefix_state_json(PrefixStateHandle state, out StringHandle json, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_prefix_state_info(PrefixStateHandle state, out ulong turn, out UIntPtr entries, out long tokens);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_prefix_state_free(IntPtr state);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_string_free(IntPtr s);

        // ---- analytics

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_dry_run(PipelineHandle pipeline, ItemsHandle items, BudgetHandle budget,
            out ResultHandle result, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_marginal_items(PipelineHandle pipeline, ItemsHandle items, BudgetHandle budget,
            long slack, [Out] UIntPtr[] positions, UIntPtr capacity, out UIntPtr count, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_pipeline_min_budget_for(PipelineHandle pipeline, ItemsHandle items, UIntPtr target,
            long ceiling, [MarshalAs(UnmanagedType.U1)] out bool found, out long budget, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_budget_utilization(ResultHandle result, out double value);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_kind_diversity(ResultHandle result, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_timestamp_coverage(ResultHandle result, out double value);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_result_quota_utilization(ResultHandle result, out QuotaUtilizationHandle utilization,
            out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_quota_utilization_count(QuotaUtilizationHandle utilization, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_quota_utilization_entry(QuotaUtilizationHandle utilization, UIntPtr i,
            ref KindQuotaUtilization entry, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_quota_utilization_free(IntPtr utilization);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_sensitivity_new(ItemsHandle items, BudgetHandle budget, IntPtr variants, UIntPtr count,
            out SensitivityHandle sensitivity, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_sensitivity_variant_count(SensitivityHandle s, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_sensitivity_variant_label(SensitivityHandle s, UIntPtr i, out Str label);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_sensitivity_variant_result(SensitivityHandle s, UIntPtr i, out ResultHandle result, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_sensitivity_diff_count(SensitivityHandle s, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_sensitivity_diff(SensitivityHandle s, UIntPtr i, out UIntPtr itemIndex, out IntPtr statuses, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_sensitivity_free(IntPtr s);

        // ---- token counting (the encodings are static: a plain pointer, never freed)

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_encoding_get(Str name, out IntPtr encoding, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_encoding_name(IntPtr encoding, out Str name);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_encoding_count(IntPtr encoding, Str text, out long tokens, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_encoding_count_with_limit(IntPtr encoding, Str text, long limit, out long tokens,
            out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_encoding_truncate(IntPtr encoding, Str text, long maxTokens, out UIntPtr len,
            out long tokens, out IntPtr error);

        // ---- chat requests

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_options_init(ref ChatOptions options, UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_trim(int format, Str request, BudgetHandle budget, PipelineHandle pipeline,
            ref ChatOptions options, out ChatResultHandle result, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_json(ChatResultHandle result, out Str json);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_tokens(ChatResultHandle result, out long tokens);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_input_tokens(ChatResultHandle result, out long tokens);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_kept(ChatResultHandle result, out IntPtr ptr, out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_dropped(ChatResultHandle result, out IntPtr ptr, out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_shortened(ChatResultHandle result, out IntPtr ptr, out UIntPtr len);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_item_count(ChatResultHandle result, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_item_path(ChatResultHandle result, UIntPtr i, out Str path);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_adjustment_count(ChatResultHandle result, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_adjustment(ChatResultHandle result, UIntPtr i, out Str reason,
            out UIntPtr pathCount);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_adjustment_path(ChatResultHandle result, UIntPtr i, UIntPtr j, out Str path);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_rule_pin_count(ChatResultHandle result, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_rule_pin(ChatResultHandle result, UIntPtr i, out Str path, out Str reason);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int ctxpack_chat_result_selection(ChatResultHandle result, out ResultHandle selection, out IntPtr error);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void ctxpack_chat_result_free(IntPtr result);

        // ---- helpers

        internal static UIntPtr Size<T>() where T : struct => (UIntPtr)Marshal.SizeOf(typeof(T));

        /// Copies a UTF-8 string owned by the library (an error, a result, a callback's
        /// view), decoding it in place (no intermediate byte array).
        internal static unsafe string ToManaged(Str s)
        {
            var len = checked((int)s.Len.ToUInt64());
            if (len == 0) return "";
            return System.Text.Encoding.UTF8.GetString((byte*)s.Ptr, len);
        }
    }
}
