using System;
using System.Collections.Generic;
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
        public string Kind { get; set; }

        /// <summary>The source; null or empty means "Chat".</summary>
        public string Source { get; set; }

        /// <summary>Priority, higher is more important.</summary>
        public long? Priority { get; set; }

        /// <summary>Tags, order and duplicates kept.</summary>
        public IList<string> Tags { get; set; } = new List<string>();

        /// <summary>Metadata key/value pairs (keys are case-sensitive).</summary>
        public IDictionary<string, string> Metadata { get; set; } = new Dictionary<string, string>();

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
        public string Group { get; set; }

        /// <summary>A built-in encoding ("o200k_base", "cl100k_base") with which the library
        /// counts Content's tokens (Tokens must then be 0). Null or empty: Tokens is the
        /// caller's count (docs/tokenizer.md).</summary>
        public string Encoding { get; set; }
        /// <summary>Cheaper alternative forms, richest first by convention (docs/variants.md): a
        /// run may place one of them instead of the item (RunResult.Forms says which).</summary>
        public IList<Variant> Variants { get; set; } = new List<Variant>();

        public override string ToString() => $"ContextItem({Content}, {Tokens})";

        /// Builds the descriptor array of `items` in the arena. push_many takes
        /// descs[0].struct_size as the stride, so every element carries sizeof(ItemDesc), set
        /// by ctxpack_item_desc_init with every other byte zero.
        internal static unsafe IntPtr Descriptors(NativeArena arena, IReadOnlyList<ContextItem> items)
        {
            var descs = (Native.ItemDesc*)arena.Array<Native.ItemDesc>(items.Count);
            for (int i = 0; i < items.Count; i++)
            {
                var it = items[i] ?? throw new ArgumentNullException(nameof(items), $"item {i} is null");
                var d = &descs[i];
                Native.ctxpack_item_desc_init((IntPtr)d, Native.Size<Native.ItemDesc>());
                d->Content = arena.Str(it.Content);
                d->Tokens = it.Tokens;
                d->Kind = arena.Str(it.Kind);
                d->Source = arena.Str(it.Source);
                if (it.Priority is long p) { d->Priority = p; d->HasPriority = 1; }
                if (it.Tags != null && it.Tags.Count > 0)
                {
                    var tags = (Native.Str*)arena.Array<Native.Str>(it.Tags.Count);
                    for (int k = 0; k < it.Tags.Count; k++) tags[k] = arena.Str(it.Tags[k]);
                    d->Tags = (IntPtr)tags;
                    d->TagCount = (UIntPtr)it.Tags.Count;
                }
                if (it.Metadata != null && it.Metadata.Count > 0)
                {
                    var entries = (Native.MetadataEntry*)arena.Array<Native.MetadataEntry>(it.Metadata.Count);
                    int k = 0;
                    foreach (var kv in it.Metadata.OrderBy(kv => kv.Key, StringComparer.Ordinal))
                    {
                        entries[k++] = new Native.MetadataEntry { Key = arena.Str(kv.Key), Value = arena.Str(kv.Value) };
                    }
                    d->Metadata = (IntPtr)entries;
                    d->MetadataCount = (UIntPtr)k;
                }
                if (it.TimestampUnixNanos is long ts) { d->TimestampNs = ts; d->HasTimestamp = 1; }
                if (it.FutureRelevanceHint is double h) { d->FutureRelevanceHint = h; d->HasFutureRelevanceHint = 1; }
                d->Pinned = it.Pinned ? (byte)1 : (byte)0;
                if (it.OriginalTokens is long o) { d->OriginalTokens = o; d->HasOriginalTokens = 1; }
                d->Group = arena.Str(it.Group);
                d->Encoding = arena.Str(it.Encoding);
                if (it.Variants != null && it.Variants.Count > 0)
                {
                    var vs = (Native.VariantDesc*)arena.Array<Native.VariantDesc>(it.Variants.Count);
                    for (int k = 0; k < it.Variants.Count; k++)
                    {
                        var v = it.Variants[k] ?? throw new ArgumentNullException(nameof(items), $"item {i}: variant {k} is null");
                        Native.ctxpack_variant_desc_init((IntPtr)(&vs[k]), Native.Size<Native.VariantDesc>());
                        vs[k].Content = arena.Str(v.Content);
                        vs[k].Tokens = v.Tokens;
                        vs[k].Quality = v.Quality;
                    }
                    d->Variants = (IntPtr)vs;
                    d->VariantCount = (UIntPtr)it.Variants.Count;
                }
            }
            return (IntPtr)descs;
        }

        /// Copies the views a callback receives (valid only during the call).
        internal static unsafe ContextItem[] FromViews(IntPtr views, UIntPtr count)
        {
            var vs = (Native.ItemView*)views;
            var items = new ContextItem[checked((int)count.ToUInt64())];
            for (int i = 0; i < items.Length; i++)
            {
                var v = &vs[i];
                var it = new ContextItem(Native.ToManaged(v->Content), v->Tokens)
                {
                    Kind = Native.ToManaged(v->Kind),
                    Source = Native.ToManaged(v->Source),
                    Pinned = v->Pinned != 0,
                };
                if (v->HasPriority != 0) it.Priority = v->Priority;
                var tags = (Native.Str*)v->Tags;
                for (ulong k = 0; k < v->TagCount.ToUInt64(); k++) it.Tags.Add(Native.ToManaged(tags[k]));
                var md = (Native.MetadataEntry*)v->Metadata;
                for (ulong k = 0; k < v->MetadataCount.ToUInt64(); k++)
                {
                    it.Metadata[Native.ToManaged(md[k].Key)] = Native.ToManaged(md[k].Value);
                }
                if (v->HasTimestamp != 0) it.TimestampUnixNanos = v->TimestampNs;
                if (v->HasFutureRelevanceHint != 0) it.FutureRelevanceHint = v->FutureRelevanceHint;
                if (v->HasOriginalTokens != 0) it.OriginalTokens = v->OriginalTokens;
                items[i] = it;
            }
            return items;
        }
    }

    /// <summary>A list of items held by the library. Pipeline.Run copies a list of
    /// ContextItem into a temporary one on every call; an ItemList lets several runs share
    /// one copy. Concurrent runs may read one list; Push and Clear must not overlap any
    /// other use.</summary>
    public sealed class ItemList : IDisposable
    {
        internal readonly ItemsHandle Handle;

        public ItemList(IEnumerable<ContextItem> items = null)
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
