//! Cache keys: SHA-256 over labelled, length-prefixed parts, so that no two different
//! inputs share a key by concatenation.

use sha2::{Digest, Sha256};
use std::fmt;

/// A content address: SHA-256 over the labelled, length-prefixed parts that
/// determine the compiled output.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Key(pub [u8; 32]);

impl Key {
    /// Lower-case hex (64 characters); also the entry's file stem.
    pub fn hex(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(DIGITS[(b >> 4) as usize] as char);
            s.push(DIGITS[(b & 15) as usize] as char);
        }
        s
    }
}

impl Key {
    /// The key whose `hex` is `s` (64 lower-case hex characters), else None.
    pub fn from_hex(s: &str) -> Option<Key> {
        if s.len() != 64 {
            return None;
        }
        let val = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let mut k = [0u8; 32];
        for (i, pair) in s.as_bytes().chunks_exact(2).enumerate() {
            k[i] = val(pair[0])? << 4 | val(pair[1])?;
        }
        Some(Key(k))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

/// Incremental builder of a [`Key`].
///
/// Every piece fed to the hash is tagged and length-prefixed (u64 LE), so the
/// encoding is unambiguous: `("ab","c")` and `("a","bc")` differ, as do parts
/// with equal bytes but different labels, and keys of different domains.
#[derive(Default, Clone)]
pub struct KeyBuilder {
    h: Sha256,
}

impl KeyBuilder {
    /// Starts a key in `domain` (e.g. `"cudyn.module.v1"`), separating it from
    /// keys built for any other purpose.
    pub fn new(domain: &str) -> Self {
        let mut b = KeyBuilder::default();
        b.h.update(b"D");
        b.feed(domain.as_bytes());
        b
    }

    /// Adds one labelled part (e.g. `("source", src)`, `("option", "-arch=sm_90")`).
    pub fn part(&mut self, label: &str, bytes: &[u8]) -> &mut Self {
        self.h.update(b"P");
        self.feed(label.as_bytes());
        self.feed(bytes);
        self
    }

    /// The key of everything added so far (the builder stays usable).
    pub fn finish(&self) -> Key {
        Key(self.h.clone().finalize().into())
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.h.update((bytes.len() as u64).to_le_bytes());
        self.h.update(bytes);
    }
}

impl fmt::Debug for KeyBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyBuilder").finish_non_exhaustive()
    }
}
