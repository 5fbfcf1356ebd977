using System;
using System.Collections;
using System.Collections.Generic;
using System.Diagnostics.CodeAnalysis;
using System.Text;
using System.Threading;

namespace Ctxpack
{
    /// <summary>The items a custom component receives, read in place from the library's item
    /// views: nothing is copied until a member is read, and then only that member. Valid only
    /// during the callback: using the views afterwards throws
    /// <see cref="ObjectDisposedException"/> (the memory belongs to the library and is gone),
    /// so copy what must outlive the call (<see cref="ItemView.ToContextItem"/>, or a
    /// member's value).</summary>
    public sealed unsafe class ItemViews : IReadOnlyList<ItemView>
    {
        readonly Native.ItemView* first;
        readonly int count;
        int ended;

        internal ItemViews(IntPtr first, UIntPtr count)
        {
            this.first = (Native.ItemView*)first;
            this.count = checked((int)count.ToUInt64());
        }

        /// Ends the views' lifetime (the callback returned).
        internal void End() => Volatile.Write(ref ended, 1);

        internal void Check()
        {
            if (Volatile.Read(ref ended) != 0)
            {
                throw new ObjectDisposedException(nameof(ItemViews), "an item view was used after its callback returned");
            }
        }

        /// <summary>The number of items.</summary>
        public int Count => count;

        /// <summary>The item at <paramref name="index"/>.</summary>
        public ItemView this[int index]
        {
            get
            {
                Check();
                if ((uint)index >= (uint)count) throw new ArgumentOutOfRangeException(nameof(index));
                return new ItemView(this, first + index);
            }
        }

        /// <summary>Copies every item into a ContextItem (tags and metadata included): the
        /// convenience of the ContextItem callbacks, at the cost of one copy of everything.</summary>
        public ContextItem[] ToContextItems()
        {
            var items = new ContextItem[count];
            for (int i = 0; i < count; i++) items[i] = this[i].ToContextItem();
            return items;
        }

        public IEnumerator<ItemView> GetEnumerator()
        {
            for (int i = 0; i < count; i++) yield return this[i];
        }

        IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();
    }

    /// <summary>One item of <see cref="ItemViews"/>, with the same lifetime. Every member reads
    /// the library's view; string members copy only the string asked for.</summary>
    public unsafe struct ItemView
    {
        readonly ItemViews owner;
        readonly Native.ItemView* view;

        internal ItemView(ItemViews owner, Native.ItemView* view)
        {
            this.owner = owner;
            this.view = view;
        }

        Native.ItemView* V
        {
            get
            {
                if (owner == null) throw new InvalidOperationException("a default ItemView has no item");
                owner.Check();
                return view;
            }
        }

        /// <summary>The text (a copy).</summary>
        public string Content => Text(V->Content);

        /// <summary>The length of the text in UTF-8 bytes, without copying it.</summary>
        public int ContentByteCount => checked((int)V->Content.Len.ToUInt64());

#if NETCOREAPP
        /// <summary>The text's UTF-8 bytes in the library's memory (no copy), valid only during
        /// the callback like the view.</summary>
        public ReadOnlySpan<byte> ContentUtf8 => Bytes(V->Content);

        /// <summary>The UTF-8 bytes of the tag at <paramref name="index"/> (no copy), valid
        /// only during the callback.</summary>
        public ReadOnlySpan<byte> TagUtf8(int index)
        {
            var v = V;
            if ((uint)index >= v->TagCount.ToUInt64()) throw new ArgumentOutOfRangeException(nameof(index));
            return Bytes(((Native.Str*)v->Tags)[index]);
        }

        static ReadOnlySpan<byte> Bytes(Native.Str s) => new ReadOnlySpan<byte>((void*)s.Ptr, checked((int)s.Len.ToUInt64()));
#endif

        /// <summary>The token count.</summary>
        public long Tokens => V->Tokens;

        /// <summary>The kind ("Message" when the item gave none).</summary>
        public string Kind => Text(V->Kind);

        /// <summary>Whether the kind is exactly <paramref name="kind"/> (ordinal), without
        /// copying it.</summary>
        public bool IsKind(string kind) => TextEquals(V->Kind, kind);

        /// <summary>The source ("Chat" when the item gave none).</summary>
        public string Source => Text(V->Source);

        /// <summary>The priority, or null.</summary>
        public long? Priority => V->HasPriority != 0 ? V->Priority : (long?)null;

        /// <summary>Whether the item is pinned.</summary>
        public bool Pinned => V->Pinned != 0;

        /// <summary>The timestamp in nanoseconds since the Unix epoch, or null.</summary>
        public long? TimestampUnixNanos => V->HasTimestamp != 0 ? V->TimestampNs : (long?)null;

        /// <summary>The timestamp (100 ns resolution), or null.</summary>
        public DateTimeOffset? Timestamp =>
            TimestampUnixNanos is long ns ? ContextItem.FromUnixNanos(ns) : (DateTimeOffset?)null;

        /// <summary>The future-relevance hint, or null.</summary>
        public double? FutureRelevanceHint => V->HasFutureRelevanceHint != 0 ? V->FutureRelevanceHint : (double?)null;

        /// <summary>The token count before truncation, or null.</summary>
        public long? OriginalTokens => V->HasOriginalTokens != 0 ? V->OriginalTokens : (long?)null;

        /// <summary>The number of tags.</summary>
        public int TagCount => checked((int)V->TagCount.ToUInt64());

        /// <summary>The tag at <paramref name="index"/> (a copy).</summary>
        public string Tag(int index)
        {
            var v = V;
            if ((uint)index >= v->TagCount.ToUInt64()) throw new ArgumentOutOfRangeException(nameof(index));
            return Text(((Native.Str*)v->Tags)[index]);
        }

        /// <summary>Whether one of the tags is exactly <paramref name="tag"/> (ordinal), without
        /// copying any.</summary>
        public bool HasTag(string tag)
        {
            var v = V;
            var tags = (Native.Str*)v->Tags;
            for (ulong i = 0; i < v->TagCount.ToUInt64(); i++)
            {
                if (TextEquals(tags[i], tag)) return true;
            }
            return false;
        }

        /// <summary>Copies the tags.</summary>
        public string[] Tags
        {
            get
            {
                var v = V;
                var tags = (Native.Str*)v->Tags;
                var out_ = new string[checked((int)v->TagCount.ToUInt64())];
                for (int i = 0; i < out_.Length; i++) out_[i] = Text(tags[i]);
                return out_;
            }
        }

        /// <summary>The number of metadata entries.</summary>
        public int MetadataCount => checked((int)V->MetadataCount.ToUInt64());

        /// <summary>The metadata entry at <paramref name="index"/> (entries are sorted by key,
        /// bytewise; a copy).</summary>
        public KeyValuePair<string, string> MetadataAt(int index)
        {
            var v = V;
            if ((uint)index >= v->MetadataCount.ToUInt64()) throw new ArgumentOutOfRangeException(nameof(index));
            var e = ((Native.MetadataEntry*)v->Metadata)[index];
            return new KeyValuePair<string, string>(Text(e.Key), Text(e.Value));
        }

        /// <summary>Looks a metadata key up (ordinal); only the value found is copied.</summary>
        public bool TryGetMetadata(string key, [MaybeNullWhen(false)] out string value)
        {
            var v = V;
            var entries = (Native.MetadataEntry*)v->Metadata;
            for (ulong i = 0; i < v->MetadataCount.ToUInt64(); i++)
            {
                if (TextEquals(entries[i].Key, key))
                {
                    value = Text(entries[i].Value);
                    return true;
                }
            }
            value = null;
            return false;
        }

        /// <summary>Copies the whole item (tags and metadata included). Group, Encoding and
        /// Variants are not part of a callback's view and stay empty.</summary>
        public ContextItem ToContextItem()
        {
            var v = V;
            var it = new ContextItem(Text(v->Content), v->Tokens)
            {
                Kind = Text(v->Kind),
                Source = Text(v->Source),
                Pinned = v->Pinned != 0,
                Priority = Priority,
                TimestampUnixNanos = TimestampUnixNanos,
                FutureRelevanceHint = FutureRelevanceHint,
                OriginalTokens = OriginalTokens,
            };
            if (v->TagCount.ToUInt64() > 0) it.Tags = new List<string>(Tags);
            if (v->MetadataCount.ToUInt64() > 0)
            {
                var entries = (Native.MetadataEntry*)v->Metadata;
                var md = new Dictionary<string, string>();
                for (ulong i = 0; i < v->MetadataCount.ToUInt64(); i++) md[Text(entries[i].Key)] = Text(entries[i].Value);
                it.Metadata = md;
            }
            return it;
        }

        static string Text(Native.Str s) => Native.ToManaged(s);

        /// Ordinal comparison of the library's UTF-8 with a string, without allocating: ASCII
        /// compares byte for char; anything else is decoded and compared.
        static bool TextEquals(Native.Str s, string text)
        {
            if (text == null) return false;
            var bytes = (byte*)s.Ptr;
            var len = s.Len.ToUInt64();
            if (len == (ulong)text.Length)
            {
                int i = 0;
                for (; i < text.Length; i++)
                {
                    byte b = bytes[i];
                    if (b >= 0x80) break;
                    if (b != text[i]) return false;
                }
                if (i == text.Length) return true;
            }
            else if (len < (ulong)text.Length)
            {
                return false; // UTF-8 never takes fewer bytes than UTF-16 code units
            }
            return string.Equals(Native.ToManaged(s), text, StringComparison.Ordinal);
        }
    }
}
