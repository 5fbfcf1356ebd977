//! [`SharedStore`]: the reference an item holds to its batch's [`TextStore`], counted
//! like an `Arc` but able to add or remove many references in one atomic operation.
//!
//! A push gives every item of a 64 KiB store a reference to it, and freeing a list drops
//! them all again. With `Arc` that is one atomic increment and one atomic decrement per
//! item; [`SharedStore::share_with`] counts a whole store's items at once and
//! [`drop_items`] gives back each run of consecutive items sharing a store at once.
//! Everything else (`Clone`, `Drop`, reading the store) behaves as `Arc<TextStore>` does.

use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicUsize, Ordering};

use crate::model::store::TextStore;
use crate::model::ContextItem;

/// The most references a store may have. Beyond it (only reachable by leaking
/// references, e.g. `mem::forget` of clones in a loop) the count could wrap and free a
/// store still in use, so the process aborts instead, as `Arc` does.
const MAX_REFS: usize = isize::MAX as usize;

/// The heap block a [`SharedStore`] points to: the count and the store.
struct Counted {
    refs: AtomicUsize,
    store: TextStore,
}

/// A counted reference to a finished [`TextStore`]; the store is freed with the last
/// reference.
pub(crate) struct SharedStore {
    counted: NonNull<Counted>,
}

// SAFETY: the store is never changed once shared (only read through `&TextStore`, which
// is `Sync` as its `String`s and `Vec` are), and the count is atomic, so references may
// move to and be used from any thread, as `Arc<TextStore>` may.
unsafe impl Send for SharedStore {}
// SAFETY: as above.
unsafe impl Sync for SharedStore {}

impl SharedStore {
    /// The first reference to `store`.
    pub(crate) fn new(store: TextStore) -> Self {
        let counted = Box::new(Counted {
            refs: AtomicUsize::new(1),
            store,
        });
        Self {
            counted: NonNull::from(Box::leak(counted)),
        }
    }

    fn counted(&self) -> &Counted {
        // SAFETY: the block lives as long as any reference to it, and this is one.
        unsafe { self.counted.as_ref() }
    }

    /// Adds `n` references, aborting past [`MAX_REFS`].
    fn add_refs(&self, n: usize) {
        // Relaxed, as `Arc::clone`: a new reference is made from an existing one, which
        // keeps the block alive, and no other memory is published through the count.
        let before = self.counted().refs.fetch_add(n, Ordering::Relaxed);
        if before > MAX_REFS || n > MAX_REFS - before {
            std::process::abort();
        }
    }

    /// Gives a reference to every item of `items`, consuming this one: one atomic
    /// addition for all of them instead of one per item. With no items the reference is
    /// dropped.
    pub(crate) fn share_with(self, items: &mut [ContextItem]) {
        let Some(extra) = items.len().checked_sub(1) else {
            return;
        };
        self.add_refs(extra);
        let counted = self.counted;
        // This reference becomes the first item's: it is counted already.
        std::mem::forget(self);
        for item in items {
            item.set_store(SharedStore { counted });
        }
    }

    /// Gives back `n` references to the block `counted` (at least one), freeing it when
    /// they were the last.
    ///
    /// # Safety
    /// The caller owns `n` references to `counted` (taken out of their `SharedStore`s
    /// with [`into_counted`](Self::into_counted)) and uses none of them afterwards.
    unsafe fn release(counted: NonNull<Counted>, n: usize) {
        // SAFETY: the caller's references keep the block alive until this subtraction.
        let refs = unsafe { &counted.as_ref().refs };
        // Release, then Acquire before freeing, as `Arc`'s drop: every use of the store
        // through another reference happens before the free.
        if refs.fetch_sub(n, Ordering::Release) != n {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: these were the last references, the block came from `Box::leak` in
        // `new`, and nothing can reach it any more.
        drop(unsafe { Box::from_raw(counted.as_ptr()) });
    }

    /// The block this reference counts in, without giving the reference back: the
    /// caller now owns it and must pass it to [`release`](Self::release).
    fn into_counted(self) -> NonNull<Counted> {
        let counted = self.counted;
        std::mem::forget(self);
        counted
    }

    /// The number of references (for tests).
    #[cfg(test)]
    pub(crate) fn ref_count(&self) -> usize {
        self.counted().refs.load(Ordering::Acquire)
    }
}

impl Clone for SharedStore {
    fn clone(&self) -> Self {
        self.add_refs(1);
        Self {
            counted: self.counted,
        }
    }
}

impl Drop for SharedStore {
    fn drop(&mut self) {
        // SAFETY: this reference is owned and is not used after `drop`.
        unsafe { Self::release(self.counted, 1) }
    }
}

impl Deref for SharedStore {
    type Target = TextStore;

    #[inline]
    fn deref(&self) -> &TextStore {
        &self.counted().store
    }
}

/// Drops every item of `items`, giving their store references back with one atomic
/// subtraction per run of consecutive items sharing a store — one per store for the
/// items of a push — instead of one per item. One pass: each item is taken out, its
/// reference counted into the run, and the rest of it dropped while it is in the cache.
pub(crate) fn drop_items(items: &mut Vec<ContextItem>) {
    let mut run: Option<(NonNull<Counted>, usize)> = None;
    for mut item in items.drain(..) {
        let Some(store) = item.take_store() else {
            continue;
        };
        let counted = store.into_counted();
        run = match run {
            Some((current, n)) if current == counted => Some((current, n + 1)),
            previous => {
                if let Some((current, n)) = previous {
                    // SAFETY: the `n` references of the run were taken out above.
                    unsafe { SharedStore::release(current, n) };
                }
                Some((counted, 1))
            }
        };
    }
    if let Some((current, n)) = run {
        // SAFETY: as above.
        unsafe { SharedStore::release(current, n) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ItemValues, TextPacker};

    fn store_with(text: &str) -> SharedStore {
        let mut packer = TextPacker::new();
        packer.item(text).unwrap();
        packer.finish()
    }

    /// `count` items packed into one store, each with its content `<prefix><i>`.
    fn batch(prefix: &str, count: usize) -> (Vec<ContextItem>, SharedStore) {
        let mut packer = TextPacker::new();
        let mut items: Vec<ContextItem> = (0..count)
            .map(|i| {
                let content = format!("{prefix}{i}");
                let strings = packer.item(&content).unwrap();
                let hash = crate::hash::hash_bytes(content.as_bytes());
                ContextItem::packed(strings, hash, ItemValues::default())
            })
            .collect();
        let store = packer.finish();
        store.clone().share_with(&mut items);
        (items, store)
    }

    #[test]
    fn clone_and_drop_count_like_an_arc() {
        let store = store_with("abc");
        assert_eq!(store.ref_count(), 1);
        let copy = store.clone();
        assert_eq!(store.ref_count(), 2);
        assert_eq!(copy.text(), "abc");
        drop(copy);
        assert_eq!(store.ref_count(), 1);
    }

    #[test]
    fn sharing_counts_one_reference_per_item() {
        let (items, store) = batch("a", 5);
        assert_eq!(store.ref_count(), 6);
        assert_eq!(items[3].content(), "a3");
        // Sharing with no items gives the reference back.
        store.clone().share_with(&mut []);
        assert_eq!(store.ref_count(), 6);
        drop(items);
        assert_eq!(store.ref_count(), 1);
    }

    /// `drop_items` gives back exactly the references of the items it drops: over
    /// several stores, interleaved, with items of no store, and with clones outliving the
    /// list (which keep reading their text).
    #[test]
    fn drop_items_releases_each_run_of_a_store() {
        let (a, store_a) = batch("a", 4);
        let (b, store_b) = batch("b", 3);
        let survivor = a[1].clone();
        let unattached = ContextItem::packed(
            TextPacker::new().item("x").unwrap(),
            0,
            ItemValues::default(),
        );
        // a0 a1 b0 b1 a2 (none) b2 a3: runs of length 2, 2, 1, 1, 1.
        let mut list = vec![
            a[0].clone(),
            a[1].clone(),
            b[0].clone(),
            b[1].clone(),
            a[2].clone(),
            unattached,
            b[2].clone(),
            a[3].clone(),
        ];
        drop((a, b));
        assert_eq!((store_a.ref_count(), store_b.ref_count()), (6, 4));
        drop_items(&mut list);
        assert!(list.is_empty());
        assert_eq!((store_a.ref_count(), store_b.ref_count()), (2, 1));
        assert_eq!(survivor.content(), "a1");
        drop(survivor);
        assert_eq!(store_a.ref_count(), 1);
    }

    #[test]
    fn items_move_to_other_threads_and_are_dropped_there() {
        let (items, store) = batch("t", 64);
        let handles: Vec<_> = items
            .chunks(16)
            .map(|chunk| {
                let mut chunk = chunk.to_vec();
                std::thread::spawn(move || {
                    let bytes = chunk.iter().map(|i| i.content().len()).sum::<usize>();
                    drop_items(&mut chunk);
                    bytes
                })
            })
            .collect();
        let bytes: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(
            bytes,
            items.iter().map(|i| i.content().len()).sum::<usize>()
        );
        assert_eq!(store.ref_count(), 65);
        drop(items);
        assert_eq!(store.ref_count(), 1);
    }
}
