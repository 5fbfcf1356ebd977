//! The prefix state: what one turn placed, in order, and how to store it between turns.
//!
//! Two serialised forms carry the same content: versioned bytes (magic, version, fields,
//! entries, CRC-32C) and a JSON object with the same fields and the checksum of the bytes.
//! Both readers reject anything that is not exactly a valid state of a version they know
//! with [`Error::InvalidState`]; `docs/prefix-cache.md` gives the byte layout.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::prefix::crc32c::crc32c;

/// The four bytes every binary state starts with: `CXPS`.
pub const STATE_MAGIC: [u8; 4] = *b"CXPS";
/// The format version this library writes (and the only one it reads).
pub const STATE_VERSION: u16 = 1;
/// The `"format"` member of the JSON form.
const JSON_FORMAT: &str = "ctxpack-prefix-state";

/// Bytes before the entries: magic, version, flags, conversation hash, turn, anchor turn,
/// anchor target, entry count.
const HEADER_LEN: usize = 44;
/// Bytes of one entry: hash, group hash, tokens, position, flags.
const ENTRY_LEN: usize = 29;
/// Bytes of the trailing checksum.
const CRC_LEN: usize = 4;

/// Header flag: the state carries a conversation key hash.
const HAS_CONVERSATION: u16 = 1;
/// Entry flag: the item was pinned.
const PINNED: u8 = 1;
/// Entry flag: the item had a group key.
const GROUPED: u8 = 2;

/// One placed item of a turn, as the next turn recognises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StateEntry {
    /// The item's identity: the hash of its content ([`crate::prefix::hash_bytes`]), or
    /// the identity the caller supplied for it (`PrefixOptions::identities`).
    pub hash: u64,
    /// The hash of the item's group key, if it had one.
    pub group: Option<u64>,
    /// The item's tokens.
    pub tokens: i64,
    /// Whether the item was pinned.
    pub pinned: bool,
    /// The item's position in that turn's input (saturated at `u32::MAX`); used only to
    /// tell an edited item from a removed one in the reuse report.
    pub position: u32,
}

/// What a turn placed, in the order the provider saw it, with what the next turn needs to
/// hold it: a compact, serialisable value a host stores next to its conversation
/// (`docs/prefix-cache.md`).
///
/// ```
/// use ctxpack::prefix::PrefixState;
///
/// // A state read back from bytes that were cut short is rejected, never half-read.
/// let err = PrefixState::from_bytes(b"CXPS\x01\x00").unwrap_err();
/// assert_eq!(err.code(), ctxpack::ErrorCode::InvalidState);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PrefixState {
    pub(crate) conversation: Option<u64>,
    pub(crate) turn: u64,
    pub(crate) anchor_turn: u64,
    pub(crate) anchor_target: i64,
    pub(crate) entries: Vec<StateEntry>,
}

impl PrefixState {
    /// A state from its parts; the values are checked as the readers check them.
    pub(crate) fn new(
        conversation: Option<u64>,
        turn: u64,
        anchor_turn: u64,
        anchor_target: i64,
        entries: Vec<StateEntry>,
    ) -> Result<PrefixState> {
        let state = PrefixState {
            conversation,
            turn,
            anchor_turn,
            anchor_target,
            entries,
        };
        state.check()?;
        Ok(state)
    }

    /// The placed items, in the order the provider saw them.
    pub fn entries(&self) -> &[StateEntry] {
        &self.entries
    }
    /// The hash of the conversation key the state was made with, if one was given.
    pub fn conversation(&self) -> Option<u64> {
        self.conversation
    }
    /// How many turns made this state (1 for the state of a first turn).
    pub fn turn(&self) -> u64 {
        self.turn
    }
    /// The turn of the latest anchor (a fresh selection the following turns append to).
    pub fn anchor_turn(&self) -> u64 {
        self.anchor_turn
    }
    /// The token target that anchor selected to (its low watermark).
    pub fn anchor_target(&self) -> i64 {
        self.anchor_target
    }
    /// The tokens of all entries (saturating).
    pub fn tokens(&self) -> i64 {
        self.entries
            .iter()
            .fold(0i64, |t, e| t.saturating_add(e.tokens))
    }

    /// The rules both readers enforce on the decoded values.
    fn check(&self) -> Result<()> {
        if self.turn == 0 {
            return Err(invalid("turn must be at least 1"));
        }
        if self.anchor_turn > self.turn {
            return Err(invalid(format!(
                "anchor turn {} is after turn {}",
                self.anchor_turn, self.turn
            )));
        }
        if self.anchor_target < 0 {
            return Err(invalid(format!(
                "anchor target {} is negative",
                self.anchor_target
            )));
        }
        if u32::try_from(self.entries.len()).is_err() {
            return Err(invalid("more than 2^32 - 1 entries"));
        }
        for (i, e) in self.entries.iter().enumerate() {
            if e.tokens < 0 {
                return Err(invalid(format!("entry {i}: negative tokens {}", e.tokens)));
            }
        }
        Ok(())
    }

    /// The binary form: `CXPS`, version, flags, fields, entries, CRC-32C (little-endian
    /// throughout; `docs/prefix-cache.md` has the layout).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + ENTRY_LEN * self.entries.len() + CRC_LEN);
        out.extend_from_slice(&STATE_MAGIC);
        out.extend_from_slice(&STATE_VERSION.to_le_bytes());
        let flags = if self.conversation.is_some() {
            HAS_CONVERSATION
        } else {
            0
        };
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&self.conversation.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.turn.to_le_bytes());
        out.extend_from_slice(&self.anchor_turn.to_le_bytes());
        out.extend_from_slice(&self.anchor_target.to_le_bytes());
        // `check` keeps the count within u32.
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for e in &self.entries {
            out.extend_from_slice(&e.hash.to_le_bytes());
            out.extend_from_slice(&e.group.unwrap_or(0).to_le_bytes());
            out.extend_from_slice(&e.tokens.to_le_bytes());
            out.extend_from_slice(&e.position.to_le_bytes());
            let mut flags = 0u8;
            if e.pinned {
                flags |= PINNED;
            }
            if e.group.is_some() {
                flags |= GROUPED;
            }
            out.push(flags);
        }
        let crc = crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads the binary form. Anything but a complete, uncorrupted state of format version
    /// 1 fails with [`Error::InvalidState`]: a wrong magic, another version, a length that
    /// does not match the entry count, a checksum mismatch, an unknown flag bit, a group
    /// hash without the grouped flag, negative tokens, an anchor after the turn.
    pub fn from_bytes(bytes: &[u8]) -> Result<PrefixState> {
        if bytes.len() < 4 || bytes[..4] != STATE_MAGIC {
            return Err(invalid(
                "not a ctxpack prefix state (the magic bytes differ)",
            ));
        }
        if bytes.len() < 6 {
            return Err(invalid(format!(
                "truncated: {} bytes, the header has {HEADER_LEN}",
                bytes.len()
            )));
        }
        let version = u16::from_le_bytes([bytes[4], bytes[5]]);
        if version != STATE_VERSION {
            return Err(invalid(format!(
                "format version {version} is not supported (this library reads version \
                 {STATE_VERSION})"
            )));
        }
        if bytes.len() < HEADER_LEN + CRC_LEN {
            return Err(invalid(format!(
                "truncated: {} bytes, a state has at least {}",
                bytes.len(),
                HEADER_LEN + CRC_LEN
            )));
        }
        let mut r = Reader { bytes, at: 6 };
        let flags = r.u16();
        let conversation = r.u64();
        let turn = r.u64();
        let anchor_turn = r.u64();
        let anchor_target = r.u64() as i64;
        let count = r.u32() as usize;
        let expected = count
            .checked_mul(ENTRY_LEN)
            .and_then(|n| n.checked_add(HEADER_LEN + CRC_LEN));
        if expected != Some(bytes.len()) {
            return Err(invalid(format!(
                "{} bytes do not hold the {count} entries the header announces \
                 (truncated or corrupt)",
                bytes.len()
            )));
        }
        let body = bytes.len() - CRC_LEN;
        let stored = u32::from_le_bytes([
            bytes[body],
            bytes[body + 1],
            bytes[body + 2],
            bytes[body + 3],
        ]);
        let computed = crc32c(&bytes[..body]);
        if stored != computed {
            return Err(invalid(format!(
                "checksum mismatch (stored {stored:08x}, computed {computed:08x}): the state \
                 is corrupt"
            )));
        }
        if flags & !HAS_CONVERSATION != 0 {
            return Err(invalid(format!("unknown header flags {flags:#06x}")));
        }
        let conversation = if flags & HAS_CONVERSATION != 0 {
            Some(conversation)
        } else if conversation != 0 {
            return Err(invalid("a conversation hash without its flag"));
        } else {
            None
        };
        let mut entries = Vec::with_capacity(count);
        for i in 0..count {
            let hash = r.u64();
            let group = r.u64();
            let tokens = r.u64() as i64;
            let position = r.u32();
            let flags = r.u8();
            if flags & !(PINNED | GROUPED) != 0 {
                return Err(invalid(format!("entry {i}: unknown flags {flags:#04x}")));
            }
            let group = if flags & GROUPED != 0 {
                Some(group)
            } else if group != 0 {
                return Err(invalid(format!(
                    "entry {i}: a group hash without the grouped flag"
                )));
            } else {
                None
            };
            entries.push(StateEntry {
                hash,
                group,
                tokens,
                pinned: flags & PINNED != 0,
                position,
            });
        }
        PrefixState::new(conversation, turn, anchor_turn, anchor_target, entries)
    }

    /// The JSON form: the same fields, hashes as 16 hexadecimal digits, and the CRC-32C of
    /// the binary form as `"checksum"` (8 digits), so that an edited or damaged JSON state
    /// is caught as a damaged binary one is.
    pub fn to_json(&self) -> String {
        use std::fmt::Write;
        let mut out = String::with_capacity(160 + 90 * self.entries.len());
        let _ = write!(
            out,
            "{{\"format\":\"{JSON_FORMAT}\",\"version\":{STATE_VERSION}"
        );
        if let Some(c) = self.conversation {
            let _ = write!(out, ",\"conversation\":\"{c:016x}\"");
        }
        let _ = write!(
            out,
            ",\"turn\":{},\"anchor_turn\":{},\"anchor_target\":{},\"entries\":[",
            self.turn, self.anchor_turn, self.anchor_target
        );
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{{\"hash\":\"{:016x}\"", e.hash);
            if let Some(g) = e.group {
                let _ = write!(out, ",\"group\":\"{g:016x}\"");
            }
            let _ = write!(out, ",\"tokens\":{},\"position\":{}", e.tokens, e.position);
            if e.pinned {
                out.push_str(",\"pinned\":true");
            }
            out.push('}');
        }
        let bytes = self.to_bytes();
        let crc = u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().expect("4 bytes"));
        let _ = write!(out, "],\"checksum\":\"{crc:08x}\"}}");
        out
    }

    /// Reads the JSON form strictly: every member of the form and no other, of the right
    /// types, a known version, and a checksum that matches the fields. Anything else fails
    /// with [`Error::InvalidState`] naming the member.
    pub fn from_json(text: &str) -> Result<PrefixState> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| invalid(format!("malformed JSON: {e}")))?;
        let Value::Object(object) = value else {
            return Err(invalid("the JSON form is an object"));
        };
        let mut fields = Fields {
            object: &object,
            path: String::new(),
        };
        match fields.object.get("format") {
            Some(Value::String(s)) if s == JSON_FORMAT => {}
            _ => {
                return Err(invalid(format!(
                    "format: must be \"{JSON_FORMAT}\" (not a ctxpack prefix state)"
                )))
            }
        }
        let version = fields.u64("version")?;
        if version != u64::from(STATE_VERSION) {
            return Err(invalid(format!(
                "version: format version {version} is not supported (this library reads \
                 version {STATE_VERSION})"
            )));
        }
        fields.only(&[
            "format",
            "version",
            "conversation",
            "turn",
            "anchor_turn",
            "anchor_target",
            "entries",
            "checksum",
        ])?;
        let conversation = fields.optional_hex("conversation", 16)?;
        let turn = fields.u64("turn")?;
        let anchor_turn = fields.u64("anchor_turn")?;
        let anchor_target = fields.i64("anchor_target")?;
        let Some(Value::Array(list)) = object.get("entries") else {
            return Err(invalid("entries: is required and must be an array"));
        };
        let mut entries = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            let Value::Object(entry) = entry else {
                return Err(invalid(format!("entries[{i}]: must be an object")));
            };
            let e = Fields {
                object: entry,
                path: format!("entries[{i}]."),
            };
            e.only(&["hash", "group", "tokens", "position", "pinned"])?;
            let pinned = match entry.get("pinned") {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(invalid(format!("entries[{i}].pinned: must be a boolean"))),
            };
            let position = u32::try_from(e.u64("position")?)
                .map_err(|_| invalid(format!("entries[{i}].position: must fit in 32 bits")))?;
            entries.push(StateEntry {
                hash: e.hex("hash", 16)?,
                group: e.optional_hex("group", 16)?,
                tokens: e.i64("tokens")?,
                pinned,
                position,
            });
        }
        let checksum = fields.hex("checksum", 8)? as u32;
        fields.path.clear();
        let state = PrefixState::new(conversation, turn, anchor_turn, anchor_target, entries)?;
        let bytes = state.to_bytes();
        let crc = u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().expect("4 bytes"));
        if crc != checksum {
            return Err(invalid(format!(
                "checksum: {checksum:08x} does not match the fields ({crc:08x}): the state \
                 is corrupt or was edited"
            )));
        }
        Ok(state)
    }

    /// Reads either form: JSON when the first byte that is not white space is `{`, the
    /// binary form otherwise.
    pub fn read(bytes: &[u8]) -> Result<PrefixState> {
        match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => {
                let text = std::str::from_utf8(bytes)
                    .map_err(|e| invalid(format!("the JSON form is not UTF-8: {e}")))?;
                PrefixState::from_json(text)
            }
            _ => PrefixState::from_bytes(bytes),
        }
    }
}

/// The error of a state that cannot be used.
pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidState(message.into())
}

/// Reads little-endian numbers from a slice whose length was checked beforehand.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let out: [u8; N] = self.bytes[self.at..self.at + N]
            .try_into()
            .expect("length checked by the caller");
        self.at += N;
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
}

/// The members of one JSON object of the state, with the path prefix errors name.
struct Fields<'a> {
    object: &'a Map<String, Value>,
    path: String,
}

impl Fields<'_> {
    fn name(&self, key: &str) -> String {
        format!("{}{key}", self.path)
    }

    /// Fails on a member not in `known`.
    fn only(&self, known: &[&str]) -> Result<()> {
        match self.object.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(invalid(format!("{}: unknown member", self.name(k)))),
            None => Ok(()),
        }
    }

    fn u64(&self, key: &str) -> Result<u64> {
        match self.object.get(key) {
            Some(Value::Number(n)) => n.as_u64().ok_or_else(|| {
                invalid(format!(
                    "{}: must be an integer from 0 to 2^64 - 1",
                    self.name(key)
                ))
            }),
            Some(_) => Err(invalid(format!("{}: must be an integer", self.name(key)))),
            None => Err(invalid(format!("{}: is required", self.name(key)))),
        }
    }

    fn i64(&self, key: &str) -> Result<i64> {
        i64::try_from(self.u64(key)?).map_err(|_| {
            invalid(format!(
                "{}: must be an integer from 0 to 2^63 - 1",
                self.name(key)
            ))
        })
    }

    fn hex(&self, key: &str, digits: usize) -> Result<u64> {
        self.optional_hex(key, digits)?
            .ok_or_else(|| invalid(format!("{}: is required", self.name(key))))
    }

    /// A string of exactly `digits` lower-case hexadecimal digits, if present.
    fn optional_hex(&self, key: &str, digits: usize) -> Result<Option<u64>> {
        let Some(value) = self.object.get(key) else {
            return Ok(None);
        };
        let bad = || {
            invalid(format!(
                "{}: must be a string of {digits} lower-case hexadecimal digits",
                self.name(key)
            ))
        };
        let Value::String(s) = value else {
            return Err(bad());
        };
        if s.len() != digits || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(bad());
        }
        u64::from_str_radix(s, 16).map(Some).map_err(|_| bad())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> PrefixState {
        PrefixState::new(
            Some(0x0123_4567_89ab_cdef),
            5,
            3,
            4000,
            vec![
                StateEntry {
                    hash: 0xdead_beef_0000_0001,
                    group: None,
                    tokens: 120,
                    pinned: true,
                    position: 0,
                },
                StateEntry {
                    hash: 42,
                    group: Some(7),
                    tokens: 0,
                    pinned: false,
                    position: 9,
                },
            ],
        )
        .unwrap()
    }

    #[test]
    fn both_forms_read_back_exactly() {
        let s = sample();
        let bytes = s.to_bytes();
        assert_eq!(bytes.len(), HEADER_LEN + 2 * ENTRY_LEN + CRC_LEN);
        assert_eq!(PrefixState::from_bytes(&bytes).unwrap(), s);
        assert_eq!(PrefixState::read(&bytes).unwrap(), s);
        let json = s.to_json();
        assert_eq!(PrefixState::from_json(&json).unwrap(), s);
        assert_eq!(PrefixState::read(json.as_bytes()).unwrap(), s);
        let empty = PrefixState::new(None, 1, 1, 0, Vec::new()).unwrap();
        assert_eq!(PrefixState::from_bytes(&empty.to_bytes()).unwrap(), empty);
        assert_eq!(PrefixState::from_json(&empty.to_json()).unwrap(), empty);
    }

    #[test]
    fn every_truncation_and_bit_flip_is_rejected() {
        let bytes = sample().to_bytes();
        for len in 0..bytes.len() {
            let e = PrefixState::from_bytes(&bytes[..len]).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::InvalidState, "{len}");
        }
        for byte in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[byte] ^= 1 << bit;
                let e = PrefixState::from_bytes(&b).unwrap_err();
                assert_eq!(e.code(), crate::ErrorCode::InvalidState, "{byte}.{bit}");
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(PrefixState::from_bytes(&longer).is_err());
    }

    #[test]
    fn json_damage_is_rejected_with_the_member_named() {
        let json = sample().to_json();
        let cases = [
            (json.replace("\"turn\":5", "\"turn\":6"), "checksum"),
            (json.replace("\"version\":1", "\"version\":2"), "version 2"),
            (json.replace("\"tokens\":120", "\"tokens\":-120"), "tokens"),
            (json.replace("\"checksum\"", "\"check\""), "unknown member"),
            (json.replace("\"pinned\":true", "\"pinned\":1"), "pinned"),
            (json.replace("ctxpack-prefix-state", "other"), "format"),
            (json[..json.len() - 1].to_owned(), "malformed JSON"),
            ("[]".to_owned(), "object"),
        ];
        for (text, needle) in cases {
            let e = PrefixState::from_json(&text).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::InvalidState);
            assert!(e.to_string().contains(needle), "{e} lacks {needle}");
        }
    }
}
