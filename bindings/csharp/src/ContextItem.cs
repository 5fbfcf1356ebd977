using System;
using System.Collections.Generic;
using System.Diagnostics.CodeAnalysis;
using System.Linq;

namespace Ctxpack
{
    /// <summary>One candidate for the context window (a ContextItem of the specification).
    /// Optional fields are null when absent.</summary>
    /// <summary>A cheaper alternative form of an item (docs/variants.md): a summary, an excerpt
    /// or a stub placed instead of the item, never in addition. Tokens &gt;= 0; Quality in
    /// (0, 1] is the share of the item's value the form keeps. A variant with as many tokens
    /// as its item or more is accepted and pruned (SelectionReport.PrunedForms).</summary>
    public sealed class Variant
    {
        public Variant(string content, long tokens, double quality) { Content = content; Tokens = tokens; Quality = quality; }
        public string Content { get; }
        public long Tokens { get; }
        public double Quality { get; }
    }

    public sealed class ContextItem
    {
        static readonly long UnixEpochTicks = new DateTime(1970, 1, 1, 0, 0, 0, DateTimeKind.Utc).Ticks;

        public ContextItem(string content, long tokens)
        {
            Content = content;
            Tokens = tokens;
        }

        /// <summary>The text; must not be empty.</summary>
        public string Content { get; set; }

        /// <summary>Caller-counted tokens; negative items are excluded by a run.</summary>
        public long Tokens { get; set; }

        /// <summary>The kind; null or empty means "Message".</summary>
        [AllowNull, MaybeNull] public string Kind { get; set; }

        /// <summary>The source; null or empty means "Chat".</summary>
        [AllowNull, MaybeNull] public string Source { get; set; }

        /// <summary>Priority, higher is more important.</summary>
        public long? Priority { get; set; }

        // The collections are created on first read of the property, so an item that has
        // none costs no empty list or dictionary; the binding reads the fields.
        IList<string> tags;
        IDictionary<string, string> metadata;
        IList<Variant> variants;

        /// <summary>Tags, order and duplicates kept (an empty list until set or added to).</summary>
        [AllowNull] public IList<string> Tags { get => tags ?? (tags = new List<string>()); set => tags = value; }

        /// <summary>Metadata key/value pairs (keys are case-sensitive; an empty dictionary
        /// until set or added to).</summary>
        [AllowNull] public IDictionary<string, string> Metadata
        {
            get => metadata ?? (metadata = new Dictionary<string, string>());
            set => metadata = value;
        }

        /// <summary>The timestamp in nanoseconds since the Unix epoch (UTC), the ABI's unit.</summary>
        public long? TimestampUnixNanos { get; set; }

        /// <summary>The timestamp as a DateTimeOffset (100 ns resolution; TimestampUnixNanos
        /// keeps full precision).</summary>
        public DateTimeOffset? Timestamp
        {
            get => TimestampUnixNanos is long ns ? FromUnixNanos(ns) : (DateTimeOffset?)null;
            set => TimestampUnixNanos = value is DateTimeOffset t ? ToUnixNanos(t) : (long?)null;
        }

        internal static long ToUnixNanos(DateTimeOffset t) => checked((t.UtcTicks - UnixEpochTicks) * 100);

        internal static DateTimeOffset FromUnixNanos(long ns) => new DateTimeOffset(UnixEpochTicks + ns / 100, TimeSpan.Zero);

        /// <summary>Future-relevance hint, conventionally in [0, 1].</summary>
        public double? FutureRelevanceHint { get; set; }

        /// <summary>Pinned items bypass scoring and slicing and are always placed.</summary>
        public bool Pinned { get; set; }

        /// <summary>Informational token count before truncation.</summary>
        public long? OriginalTokens { get; set; }

        /// <summary>The group key (docs/groups.md): items with equal keys are selected or
        /// dropped together and placed next to each other. Null or empty: no group.</summary>
        [AllowNull, MaybeNull] public string Group { get; set; }

        /// <summary>A built-in encoding ("o200k_base", "cl100k_base") with which the library
        /// counts Content's tokens (Tokens must then be 0). Null or empty: Tokens is the
        /// caller's count (docs/tokenizer.md).</summary>
        [AllowNull, MaybeNull] public string Encoding { get; set; }
        /// <summary>Cheaper alternative forms, richest first by convention (docs/variants.md): a
        /// run may place one of them instead of the item (RunResult.Forms says which).</summary>
        [AllowNull] public IList<Variant> Variants { get => variants ?? (variants = new List<Variant>()); set => variants = value; }

        public override string ToString() => $"ContextItem({Content}, {Tokens})";

        /// Builds the descriptor array of `items` in the arena. push_many takes
        /// descs[0].struct_size as the stride, so every element carries sizeof(ItemDesc) with
        /// every other byte zero (the arena's memory is zeroed: what ctxpack_item_desc_init
        /// does, without a native call per item). Strings are encoded straight into the arena.
        internal static unsafe IntPtr Descriptors(NativeArena arena, IReadOnlyList<ContextItem> items)
        {
            var descs = (Native.ItemDesc*)arena.Alloc(checked(sizeof(Native.ItemDesc) * items.Count));
            for (int i = 0; i < items.Count; i++)
            {
                var it = items[i] ?? throw new ArgumentNullException(nameof(items), $"item {i} is null");
                var d = &descs[i];
                d->StructSize = (UIntPtr)sizeof(Native.ItemDesc);
                d->Content = arena.Str(it.Content);
                d->Tokens = it.Tokens;
                d->Kind = arena.Str(it.Kind);
                d->Source = arena.Str(it.Source);
                // Nullable fields are read through HasValue (a pattern match may box them).
                var priority = it.Priority;
                if (priority.HasValue) { d->Priority = priority.Value; d->HasPriority = 1; }
                var tags = it.tags;
                if (tags != null && tags.Count > 0)
                {
                    var array = (Native.Str*)arena.Alloc(checked(sizeof(Native.Str) * tags.Count));
                    for (int k = 0; k < tags.Count; k++) array[k] = arena.Str(tags[k]);
                    d->Tags = (IntPtr)array;
                    d->TagCount = (UIntPtr)tags.Count;
                }
                var metadata = it.metadata;
                if (metadata != null && metadata.Count > 0)
                {
                    var entries = (Native.MetadataEntry*)arena.Alloc(checked(sizeof(Native.MetadataEntry) * metadata.Count));
                    int k = 0;
                    foreach (var kv in metadata)
                    {
                        if (k == metadata.Count) break; // a dictionary whose Count lies
                        entries[k++] = new Native.MetadataEntry { Key = arena.Str(kv.Key), Value = arena.Str(kv.Value) };
                    }
                    d->Metadata = (IntPtr)entries;
                    d->MetadataCount = (UIntPtr)k;
                }
                var timestamp = it.TimestampUnixNanos;
                if (timestamp.HasValue) { d->TimestampNs = timestamp.Value; d->HasTimestamp = 1; }
                var hint = it.FutureRelevanceHint;
                if (hint.HasValue) { d->FutureRelevanceHint = hint.Value; d->HasFutureRelevanceHint = 1; }
                d->Pinned = it.Pinned ? (byte)1 : (byte)0;
                var original = it.OriginalTokens;
                if (original.HasValue) { d->OriginalTokens = original.Value; d->HasOriginalTokens = 1; }
                d->Group = arena.Str(it.Group);
                d->Encoding = arena.Str(it.Encoding);
                var variants = it.variants;
                if (variants != null && variants.Count > 0)
                {
                    var vs = (Native.VariantDesc*)arena.Alloc(checked(sizeof(Native.VariantDesc) * variants.Count));
                    for (int k = 0; k < variants.Count; k++)
                    {
                        var v = variants[k] ?? throw new ArgumentNullException(nameof(items), $"item {i}: variant {k} is null");
                        vs[k].StructSize = (UIntPtr)sizeof(Native.VariantDesc);
                        vs[k].Content = arena.Str(v.Content);
                        vs[k].Tokens = v.Tokens;
                        vs[k].Quality = v.Quality;
                    }
                    d->Variants = (IntPtr)vs;
                    d->VariantCount = (UIntPtr)variants.Count;
                }
            }
            return (IntPtr)descs;
        }
    }

    /// <summary>A list of items held by the library. Pipeline.Run copies a list of
    /// ContextItem into a temporary one on every call; an ItemList lets several runs share
    /// one copy. Concurrent runs may read one list; Push and Clear must not overlap any
    /// other use.</summary>
    public sealed class ItemList : IDisposable
    {
        internal readonly ItemsHandle Handle;

        public ItemList([AllowNull] IEnumerable<ContextItem> items = null)
        {
            Errors.Check(Native.ctxpack_items_new(out Handle, out var error), error);
            if (items != null)
            {
                try { Push(items); }
                catch { Handle.Dispose(); throw; }
            }
        }

        /// <summary>Appends items, all or nothing (an invalid item's message starts with "item
        /// &lt;index&gt;:").</summary>
        public void Push(IEnumerable<ContextItem> items)
        {
            var list = items as IReadOnlyList<ContextItem> ?? items.ToList();
            if (list.Count == 0) return;
            using (var arena = new NativeArena())
            {
                var descs = ContextItem.Descriptors(arena, list);
                Errors.Check(Native.ctxpack_items_push_many(Handle, descs, (UIntPtr)list.Count, out var error), error);
            }
        }

        public void Push(params ContextItem[] items) => Push((IEnumerable<ContextItem>)items);

        /// <summary>The number of items.</summary>
        public int Count
        {
            get
            {
                Errors.Check(Native.ctxpack_items_len(Handle, out var n));
                return checked((int)n.ToUInt64());
            }
        }

        /// <summary>Removes every item (results of earlier runs are not affected).</summary>
        public void Clear() => Errors.Check(Native.ctxpack_items_clear(Handle));

        public void Dispose() => Handle.Dispose();
    }
}
