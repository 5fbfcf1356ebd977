//! Shared text storage for items: the content, tags and group key of many items packed
//! into one buffer that the items share (`docs/design.md`, "Item storage").
//!
//! A batch of items pushed through the C ABI is packed into one [`TextStore`]: pushing an
//! item copies its strings to the end of the buffer and records where they are, and
//! freeing the batch frees the buffer and the span table — two deallocations however many
//! items and tags there are. An item built with [`crate::ContextItem::builder`] gets a
//! store of its own.

use crate::alloc;
use crate::error::{Error, Result};
use crate::model::shared_store::SharedStore;
use std::fmt;
use std::ops::Index;

/// The strings of one or more items: the contents in one text buffer (each item knows
/// its content's offsets), the tags and group keys in a second, and a table of
/// `(start, end)` byte offsets into the second, two entries per string, for every item's
/// tags followed by its group key. Tags and keys are kept apart from the contents so that
/// the scorers reading every item's tags read a dense buffer a fraction of the contents'
/// size rather than a cache line beyond each content.
#[derive(Default)]
pub(crate) struct TextStore {
    text: String,
    strings: String,
    spans: Vec<usize>,
}

impl TextStore {
    /// The contents' buffer.
    #[inline]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }
    /// The tags' and group keys' buffer, which the span table points into.
    #[inline]
    pub(crate) fn strings(&self) -> &str {
        &self.strings
    }
    /// The span table (pairs of byte offsets into [`strings`](Self::strings)).
    #[inline]
    pub(crate) fn spans(&self) -> &[usize] {
        &self.spans
    }
}

/// Where one item's strings lie in the store being packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ItemStrings {
    /// Byte offsets of the content in the contents' buffer.
    pub content: (usize, usize),
    /// Index (in strings, not entries) of the item's first tag in the span table.
    pub first: u32,
    /// Number of tags.
    pub tag_count: u32,
    /// Whether a group key follows the tags in the span table.
    pub has_group: bool,
}

/// A point to roll a [`TextPacker`] back to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    text: usize,
    strings: usize,
    spans: usize,
}

/// Packs items' strings: contents into one buffer, tags and group keys into a second with
/// their span table; [`TextPacker::finish`] turns them into the shared [`TextStore`]. Each
/// string is copied once; the buffers and the table grow geometrically and are shrunk to
/// their size at the end. Allocation failures are [`Error::OutOfMemory`].
#[derive(Default)]
pub(crate) struct TextPacker {
    text: String,
    strings: String,
    spans: Vec<usize>,
}

/// The message when a store would hold more strings than its 32-bit index can reach.
const TOO_MANY_STRINGS: &str =
    "more than 4 294 967 295 tags and group keys in one push: push the items in smaller batches";

impl TextPacker {
    /// An empty packer (allocates nothing until the first string).
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// An empty packer with room for `text` bytes of content and `strings` tags and
    /// group keys of `string_bytes` bytes in all (`strings` may be 0: the buffers then
    /// grow as tags arrive).
    pub(crate) fn with_capacity(text: usize, strings: usize, string_bytes: usize) -> Result<Self> {
        let mut packer = Self::new();
        alloc::grow_string(&mut packer.text, text)
            .map_err(|bytes| alloc::out_of_memory_bytes(bytes, "item text"))?;
        alloc::grow_string(&mut packer.strings, string_bytes)
            .map_err(|bytes| alloc::out_of_memory_bytes(bytes, "tags"))?;
        alloc::reserve(&mut packer.spans, strings.saturating_mul(2), "item strings")?;
        Ok(packer)
    }

    /// The current end, to [`rollback`](Self::rollback) to when an item fails half-way.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            text: self.text.len(),
            strings: self.strings.len(),
            spans: self.spans.len(),
        }
    }

    /// Forgets everything packed since `mark`.
    pub(crate) fn rollback(&mut self, mark: Mark) {
        self.text.truncate(mark.text);
        self.strings.truncate(mark.strings);
        self.spans.truncate(mark.spans);
    }

    /// Copies `s` to the end of `buffer`; an allocation failure names `what`.
    fn append(buffer: &mut String, s: &str, what: &str) -> Result<(usize, usize)> {
        alloc::grow_string(buffer, s.len())
            .map_err(|bytes| alloc::out_of_memory_bytes(bytes, what))?;
        let start = buffer.len();
        buffer.push_str(s);
        Ok((start, buffer.len()))
    }

    fn append_string(&mut self, s: &str, what: &str) -> Result<()> {
        if self.spans.len() / 2 >= u32::MAX as usize {
            return Err(Error::InvalidArgument(TOO_MANY_STRINGS.into()));
        }
        alloc::grow(&mut self.spans, 2, what)?;
        let (start, end) = Self::append(&mut self.strings, s, what)?;
        self.spans.extend_from_slice(&[start, end]);
        Ok(())
    }

    /// Starts an item: copies its content. Its tags and then its group key follow.
    pub(crate) fn item(&mut self, content: &str) -> Result<ItemStrings> {
        let first = u32::try_from(self.spans.len() / 2)
            .map_err(|_| Error::InvalidArgument(TOO_MANY_STRINGS.into()))?;
        Ok(ItemStrings {
            content: Self::append(&mut self.text, content, "content")?,
            first,
            tag_count: 0,
            has_group: false,
        })
    }

    /// Makes room in the span table for `count` more tags, before they are read (a count
    /// no memory can back fails here, naming `tags`, without reading any tag).
    #[inline]
    pub(crate) fn reserve_tags(&mut self, count: usize) -> Result<()> {
        alloc::grow(&mut self.spans, count.saturating_mul(2), "tags")
    }

    /// Adds a tag to the item `strings` started (before its group key).
    pub(crate) fn tag(&mut self, strings: &mut ItemStrings, tag: &str) -> Result<()> {
        debug_assert!(!strings.has_group, "tags come before the group key");
        self.append_string(tag, "a tag")?;
        strings.tag_count += 1;
        Ok(())
    }

    /// Sets the group key of the item `strings` started (after its tags).
    pub(crate) fn group(&mut self, strings: &mut ItemStrings, key: &str) -> Result<()> {
        debug_assert!(!strings.has_group, "one group key per item");
        self.append_string(key, "group")?;
        strings.has_group = true;
        Ok(())
    }

    /// Whether the buffers hold at least `bytes` bytes together: a batch starts a new
    /// store then, so that stores stay small enough for the allocator to reuse their
    /// memory (a fresh multi-megabyte buffer per push costs a page fault per 4 KiB).
    pub(crate) fn holds(&self, bytes: usize) -> bool {
        self.text.len() + self.strings.len() >= bytes
    }

    /// The shared store of everything packed, each buffer shrunk to its size when more
    /// than an eighth of it is unused (a store finished because it is full keeps its
    /// buffers as they are: one allocation fewer each).
    pub(crate) fn finish(mut self) -> SharedStore {
        if self.text.capacity() - self.text.len() > self.text.len() / 8 {
            self.text.shrink_to_fit();
        }
        if self.strings.capacity() - self.strings.len() > self.strings.len() / 8 {
            self.strings.shrink_to_fit();
        }
        if self.spans.capacity() - self.spans.len() > self.spans.len() / 8 {
            self.spans.shrink_to_fit();
        }
        SharedStore::new(TextStore {
            text: self.text,
            strings: self.strings,
            spans: self.spans,
        })
    }

    /// The number of span table entries (two per tag or group key) packed so far.
    pub(crate) fn span_entries(&self) -> usize {
        self.spans.len()
    }

    /// The bytes of tags and group keys packed so far.
    pub(crate) fn string_bytes(&self) -> usize {
        self.strings.len()
    }

    /// A store holding only `content`, without copying it (an item without tags and
    /// group key).
    pub(crate) fn content_only(content: String) -> (SharedStore, ItemStrings) {
        let strings = ItemStrings {
            content: (0, content.len()),
            ..ItemStrings::default()
        };
        let store = SharedStore::new(TextStore {
            text: content,
            strings: String::new(),
            spans: Vec::new(),
        });
        (store, strings)
    }
}

/// An item's tags, in the order given, duplicates kept: a view into the item's shared
/// storage (no string is allocated to read them).
///
/// ```
/// use ctxpack::ContextItem;
///
/// let item = ContextItem::builder("text", 1).tags(["billing", "EU", "billing"]).build()?;
/// let tags = item.tags();
/// assert_eq!(tags.len(), 3);
/// assert_eq!(&tags[1], "EU");
/// assert_eq!(tags.get(3), None);
/// assert_eq!(tags, ["billing", "EU", "billing"]);
/// assert_eq!(tags.iter().filter(|t| *t == "billing").count(), 2);
/// # Ok::<(), ctxpack::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct Tags<'a> {
    text: &'a str,
    /// Two entries per tag.
    spans: &'a [usize],
}

impl<'a> Tags<'a> {
    pub(crate) fn new(text: &'a str, spans: &'a [usize]) -> Self {
        Self { text, spans }
    }

    /// The number of tags.
    #[inline]
    pub fn len(&self) -> usize {
        self.spans.len() / 2
    }
    /// Whether there are no tags.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
    /// Tag `index`, or `None` past the end.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&'a str> {
        let span = self.spans.get(2 * index..2 * index + 2)?;
        self.text.get(span[0]..span[1])
    }
    /// The tags in order.
    #[inline]
    pub fn iter(&self) -> TagIter<'a> {
        TagIter {
            text: self.text,
            spans: self.spans.chunks_exact(2),
        }
    }
    /// The tags' bytes in order (the scorers' lookups compare bytes; reading a tag as
    /// `&str` would check its ends for character boundaries first).
    #[inline]
    pub(crate) fn bytes(&self) -> impl Iterator<Item = &'a [u8]> {
        let text = self.text.as_bytes();
        self.spans
            .chunks_exact(2)
            .map(move |span| text.get(span[0]..span[1]).unwrap_or(&[]))
    }
    /// The tags as owned strings.
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }
}

impl Index<usize> for Tags<'_> {
    type Output = str;
    /// Tag `index`; panics past the end, like a slice.
    fn index(&self, index: usize) -> &str {
        match self.get(index) {
            Some(tag) => tag,
            None => panic!("tag index {index} out of range for {} tags", self.len()),
        }
    }
}

impl<'a> IntoIterator for Tags<'a> {
    type Item = &'a str;
    type IntoIter = TagIter<'a>;
    fn into_iter(self) -> TagIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &Tags<'a> {
    type Item = &'a str;
    type IntoIter = TagIter<'a>;
    fn into_iter(self) -> TagIter<'a> {
        self.iter()
    }
}

impl fmt::Debug for Tags<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Tags<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Tags<'_> {}

impl<S: AsRef<str>> PartialEq<[S]> for Tags<'_> {
    fn eq(&self, other: &[S]) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().map(AsRef::as_ref))
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<[S; N]> for Tags<'_> {
    fn eq(&self, other: &[S; N]) -> bool {
        *self == other[..]
    }
}

impl<S: AsRef<str>> PartialEq<Vec<S>> for Tags<'_> {
    fn eq(&self, other: &Vec<S>) -> bool {
        *self == other[..]
    }
}

/// Iterator over [`Tags`].
#[derive(Clone)]
pub struct TagIter<'a> {
    text: &'a str,
    spans: std::slice::ChunksExact<'a, usize>,
}

impl<'a> TagIter<'a> {
    fn tag(&self, span: &[usize]) -> &'a str {
        self.text.get(span[0]..span[1]).unwrap_or("")
    }
}

impl<'a> Iterator for TagIter<'a> {
    type Item = &'a str;
    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let span = self.spans.next()?;
        Some(self.tag(span))
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.spans.size_hint()
    }
}

impl DoubleEndedIterator for TagIter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        let span = self.spans.next_back()?;
        Some(self.tag(span))
    }
}

impl ExactSizeIterator for TagIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_items_back_to_back_and_reads_them_back() {
        let mut p = TextPacker::new();
        let mut a = p.item("first").unwrap();
        p.tag(&mut a, "x").unwrap();
        p.tag(&mut a, "").unwrap();
        p.group(&mut a, "g1").unwrap();
        let b = p.item("second").unwrap();
        let mut c = p.item("héllo").unwrap();
        p.tag(&mut c, "Tag").unwrap();
        let store = p.finish();
        assert_eq!(store.text(), "firstsecondhéllo");
        assert_eq!(store.strings(), "xg1Tag");
        assert_eq!(&store.text()[a.content.0..a.content.1], "first");
        assert_eq!(&store.text()[b.content.0..b.content.1], "second");
        assert_eq!(&store.text()[c.content.0..c.content.1], "héllo");
        assert_eq!((a.first, a.tag_count, a.has_group), (0, 2, true));
        assert_eq!((b.first, b.tag_count, b.has_group), (3, 0, false));
        assert_eq!((c.first, c.tag_count, c.has_group), (3, 1, false));
        let tags = |s: &ItemStrings| {
            let at = 2 * s.first as usize;
            Tags::new(
                store.strings(),
                &store.spans()[at..at + 2 * s.tag_count as usize],
            )
        };
        assert_eq!(tags(&a), ["x", ""]);
        assert!(tags(&b).is_empty());
        assert_eq!(tags(&c).to_vec(), ["Tag"]);
        assert_eq!(tags(&a).iter().rev().collect::<Vec<_>>(), ["", "x"]);
        assert_eq!(tags(&a).iter().len(), 2);
        assert_eq!(format!("{:?}", tags(&a)), "[\"x\", \"\"]");
    }

    #[test]
    fn rollback_forgets_a_half_packed_item() {
        let mut p = TextPacker::new();
        p.item("kept").unwrap();
        let mark = p.mark();
        let mut s = p.item("dropped").unwrap();
        p.tag(&mut s, "t").unwrap();
        p.rollback(mark);
        let next = p.item("next").unwrap();
        assert_eq!(next.first, 0);
        let store = p.finish();
        assert_eq!(store.text(), "keptnext");
        assert!(store.strings().is_empty());
        assert!(store.spans().is_empty());
    }

    #[test]
    fn content_only_stores_without_copying() {
        let content = String::from("only");
        let ptr = content.as_ptr();
        let (store, strings) = TextPacker::content_only(content);
        assert_eq!(store.text().as_ptr(), ptr);
        assert_eq!(strings.content, (0, 4));
        assert_eq!(strings.tag_count, 0);
    }

    #[test]
    fn tags_compare_with_strings_and_index_like_a_slice() {
        let text = "abc";
        let spans = [0, 1, 1, 3];
        let tags = Tags::new(text, &spans);
        assert_eq!(tags, ["a", "bc"]);
        assert_eq!(tags, vec![String::from("a"), String::from("bc")]);
        assert_ne!(tags, ["a"]);
        assert_ne!(tags, ["a", "b"]);
        assert_eq!(&tags[1], "bc");
        assert_eq!(tags.get(2), None);
        assert!(Tags::new("", &[]).is_empty());
        assert!(std::panic::catch_unwind(|| tags[2].len()).is_err());
        let bytes: Vec<&[u8]> = tags.bytes().collect();
        assert_eq!(bytes, [&b"a"[..], b"bc"]);
        let text = "é tag ü";
        let spans = [0, 2, 2, 7, 7, 9];
        let tags = Tags::new(text, &spans);
        assert!(tags.bytes().eq(tags.iter().map(str::as_bytes)));
    }
}
