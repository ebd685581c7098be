//! The entry file format (see the table in the module above): a fixed header that names the
//! key and the payload's length and SHA-256, then the payload. Pure functions, total on any bytes.

use super::Key;
use sha2::{Digest, Sha256};
use std::fmt;

/// Magic bytes at the start of every entry file.
pub const ENTRY_MAGIC: [u8; 8] = *b"CUDYNENT";
/// Current entry format version; entries with another version are misses.
pub const ENTRY_VERSION: u32 = 1;
/// Size of the fixed header that precedes the payload.
pub const ENTRY_HEADER_LEN: usize = 8 + 4 + 32 + 8 + 32;

pub(super) const OFF_VERSION: usize = 8;
pub(super) const OFF_KEY: usize = 12;
pub(super) const OFF_LEN: usize = 44;
pub(super) const OFF_HASH: usize = 52;

/// Why an entry's bytes were rejected.
#[derive(Debug, PartialEq, Eq)]
pub enum EntryError {
    /// Shorter than the header (includes zero-length files).
    TooShort,
    /// Does not start with [`ENTRY_MAGIC`].
    BadMagic,
    /// Written by another format version.
    BadVersion,
    /// A valid-looking entry for a different key (renamed/copied file).
    ForeignKey,
    /// Payload length field disagrees with the file size (truncated or padded).
    LengthMismatch,
    /// Payload does not match its SHA-256 (corrupted).
    HashMismatch,
}

impl fmt::Display for EntryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EntryError::TooShort => "cache entry shorter than its header",
            EntryError::BadMagic => "cache entry has a bad magic number",
            EntryError::BadVersion => "cache entry has an unsupported format version",
            EntryError::ForeignKey => "cache entry belongs to another key",
            EntryError::LengthMismatch => "cache entry length does not match its header",
            EntryError::HashMismatch => "cache entry payload does not match its checksum",
        })
    }
}

impl std::error::Error for EntryError {}

/// Serialises `payload` as an entry for `key` (header + payload).
pub fn encode_entry(key: &Key, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ENTRY_HEADER_LEN + payload.len());
    out.extend_from_slice(&ENTRY_MAGIC);
    out.extend_from_slice(&ENTRY_VERSION.to_le_bytes());
    out.extend_from_slice(&key.0);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(payload));
    out.extend_from_slice(payload);
    out
}

/// Parses and validates an entry's bytes for `key`, returning the payload.
/// Pure and total: never panics, whatever the input.
pub fn decode_entry<'a>(key: &Key, bytes: &'a [u8]) -> Result<&'a [u8], EntryError> {
    let magic = bytes.get(..OFF_VERSION).ok_or(EntryError::TooShort)?;
    if magic != ENTRY_MAGIC {
        return Err(EntryError::BadMagic);
    }
    let version = bytes.get(OFF_VERSION..OFF_KEY).ok_or(EntryError::TooShort)?;
    if version != ENTRY_VERSION.to_le_bytes() {
        return Err(EntryError::BadVersion);
    }
    if bytes.len() < ENTRY_HEADER_LEN {
        return Err(EntryError::TooShort);
    }
    let (header, payload) = bytes.split_at(ENTRY_HEADER_LEN);
    if header[OFF_KEY..OFF_LEN] != key.0 {
        return Err(EntryError::ForeignKey);
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&header[OFF_LEN..OFF_HASH]);
    if u64::from_le_bytes(len) != payload.len() as u64 {
        return Err(EntryError::LengthMismatch);
    }
    if Sha256::digest(payload).as_slice() != &header[OFF_HASH..ENTRY_HEADER_LEN] {
        return Err(EntryError::HashMismatch);
    }
    Ok(payload)
}
