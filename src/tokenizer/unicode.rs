//! The character classes the split patterns need, looked up in O(1) per code point.
//!
//! `unicode_table.rs` (generated from regex-syntax, the Unicode tables the reference
//! tokenizers match with) lists runs of code points and their class; on first use they are
//! expanded into a two-stage table: 128-code-point blocks, identical blocks stored once.

use std::sync::OnceLock;

#[path = "unicode_table.rs"]
mod table;

/// The class of a character, as far as the split patterns can tell characters apart.
/// Exactly one class per code point: White_Space characters are never letters, marks or
/// numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub(super) enum Class {
    /// Anything else: punctuation, symbols, controls that are not white space, unassigned.
    Other = 0,
    /// `\s` (Unicode White_Space), including `\r` and `\n`.
    Space = 1,
    /// `\p{N}`.
    Number = 2,
    /// `\p{M}` (not a letter).
    Mark = 3,
    /// `\p{Lu}` or `\p{Lt}`.
    Upper = 4,
    /// `\p{Ll}`.
    Lower = 5,
    /// `\p{Lm}` or `\p{Lo}` (cased neither way).
    Uncased = 6,
}

impl Class {
    const BY_VALUE: [Class; 7] = [
        Class::Other,
        Class::Space,
        Class::Number,
        Class::Mark,
        Class::Upper,
        Class::Lower,
        Class::Uncased,
    ];

    /// `\p{L}`.
    #[inline]
    pub(super) fn is_letter(self) -> bool {
        matches!(self, Class::Upper | Class::Lower | Class::Uncased)
    }

    /// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`: what o200k_base allows in a word's upper part.
    #[inline]
    pub(super) fn is_upper_part(self) -> bool {
        matches!(self, Class::Upper | Class::Uncased | Class::Mark)
    }

    /// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`: what o200k_base allows in a word's lower part.
    #[inline]
    pub(super) fn is_lower_part(self) -> bool {
        matches!(self, Class::Lower | Class::Uncased | Class::Mark)
    }

    /// `[^\s\p{L}\p{N}]`: punctuation and symbols (marks included).
    #[inline]
    pub(super) fn is_punctuation(self) -> bool {
        matches!(self, Class::Other | Class::Mark)
    }
}

const BLOCK_BITS: u32 = 7;
const BLOCK: usize = 1 << BLOCK_BITS;

/// The class of every code point, in two stages.
pub(super) struct Table {
    /// Block number of each 128-code-point block.
    index: Vec<u16>,
    /// The distinct blocks.
    blocks: Vec<[Class; BLOCK]>,
}

impl Table {
    /// The class of a code point (at most U+10FFFF).
    #[inline(always)]
    pub(super) fn class_of(&self, cp: u32) -> Class {
        let block = self.index[(cp >> BLOCK_BITS) as usize];
        self.blocks[block as usize][(cp as usize) & (BLOCK - 1)]
    }
}

/// The table, built on first use.
pub(super) fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(build)
}

/// Expands the runs: a block that no run touches, or that one run covers, is one of the
/// seven uniform blocks (stored first, by class); any other block is stored as filled in.
fn build() -> Table {
    let runs = table::RUNS;
    let mut blocks: Vec<[Class; BLOCK]> = Class::BY_VALUE.iter().map(|&c| [c; BLOCK]).collect();
    let mut index = Vec::with_capacity(0x11_0000 / BLOCK);
    let mut next_run = 0; // the first run that ends at or after the current block
    for first in (0..0x11_0000u32).step_by(BLOCK) {
        let last = first + BLOCK as u32 - 1;
        while next_run < runs.len() && runs[next_run].1 < first {
            next_run += 1;
        }
        let touching = runs[next_run..]
            .iter()
            .take_while(|run| run.0 <= last)
            .collect::<Vec<_>>();
        let block = match touching.as_slice() {
            [] => Class::Other as u16,
            [run] if run.0 <= first && run.1 >= last => u16::from(run.2),
            _ => {
                let mut block = [Class::Other; BLOCK];
                for &&(start, end, class) in &touching {
                    let from = start.max(first) - first;
                    let to = end.min(last) - first;
                    block[from as usize..=to as usize].fill(Class::BY_VALUE[class as usize]);
                }
                blocks.push(block);
                (blocks.len() - 1) as u16
            }
        };
        index.push(block);
    }
    Table { index, blocks }
}

/// Makes sure the table is built (part of an encoding's first use).
pub(super) fn load() {
    table();
}

/// The class of a code point.
#[cfg(test)]
fn class_of(cp: u32) -> Class {
    table().class_of(cp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_classes() {
        assert_eq!(class_of(u32::from(b' ')), Class::Space);
        assert_eq!(class_of(u32::from(b'\n')), Class::Space);
        assert_eq!(class_of(u32::from(b'\t')), Class::Space);
        assert_eq!(class_of(u32::from(b'a')), Class::Lower);
        assert_eq!(class_of(u32::from(b'Q')), Class::Upper);
        assert_eq!(class_of(u32::from(b'7')), Class::Number);
        assert_eq!(class_of(u32::from(b'.')), Class::Other);
        assert_eq!(class_of(u32::from(b'\'')), Class::Other);
    }

    #[test]
    fn non_ascii_classes() {
        assert_eq!(class_of('中' as u32), Class::Uncased);
        assert_eq!(class_of('\u{301}' as u32), Class::Mark);
        assert_eq!(class_of('\u{3000}' as u32), Class::Space);
        assert_eq!(class_of('\u{a0}' as u32), Class::Space);
        assert_eq!(class_of('٣' as u32), Class::Number);
        assert_eq!(class_of('ǅ' as u32), Class::Upper); // titlecase
        assert_eq!(class_of('ß' as u32), Class::Lower);
        assert_eq!(class_of('😀' as u32), Class::Other);
        assert_eq!(class_of(0x10FFFF), Class::Other);
    }

    /// Every code point against regex-syntax (the generator's source) directly.
    #[test]
    fn every_code_point_matches_regex_syntax() {
        use regex_syntax::hir::{Class as HirClass, HirKind};
        let patterns = [
            (Class::Space, r"\s"),
            (Class::Number, r"\p{N}"),
            (Class::Mark, r"\p{M}"),
            (Class::Upper, r"[\p{Lu}\p{Lt}]"),
            (Class::Lower, r"\p{Ll}"),
            (Class::Uncased, r"[\p{Lm}\p{Lo}]"),
        ];
        let mut expected = vec![Class::Other; 0x11_0000];
        for (class, pattern) in patterns {
            let hir = regex_syntax::Parser::new().parse(pattern).unwrap();
            let HirKind::Class(HirClass::Unicode(set)) = hir.kind() else {
                panic!("{pattern}")
            };
            for r in set.ranges() {
                for cp in r.start() as u32..=r.end() as u32 {
                    expected[cp as usize] = class;
                }
            }
        }
        for (cp, want) in expected.iter().enumerate() {
            assert_eq!(class_of(cp as u32), *want, "U+{cp:04X}");
        }
    }
}
