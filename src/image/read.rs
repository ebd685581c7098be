//! Bounded reading of little-endian words from untrusted bytes, the only way the other files of
//! `image/` read an image: `read_u*` return `None` past the end, [`Rec`] takes a fixed-size
//! record (an ELF header, a section header, a fatbin entry header) with one bounds check and
//! then reads its fields at offsets checked when the code is compiled, and `check_range` /
//! `field_u*` turn a range or a read that does not fit into an [`ImageError`]. Nothing here
//! panics, and all offset arithmetic is checked.

use super::info::ImageError;

pub(super) fn read_array<const N: usize>(d: &[u8], off: usize) -> Option<[u8; N]> {
    d.get(off..off.checked_add(N)?)?.try_into().ok()
}
pub(super) fn read_u16(d: &[u8], off: usize) -> Option<u16> {
    read_array(d, off).map(u16::from_le_bytes)
}
pub(super) fn read_u32(d: &[u8], off: usize) -> Option<u32> {
    read_array(d, off).map(u32::from_le_bytes)
}
pub(super) fn read_u64(d: &[u8], off: usize) -> Option<u64> {
    read_array(d, off).map(u64::from_le_bytes)
}

/// A fixed-size record found within the image (an ELF header, section header, symbol, ...): one
/// bounds check when it is taken, then little-endian fields at constant offsets, each checked
/// against `N` when the code is compiled, so reading a field can neither fail nor panic.
#[derive(Clone, Copy)]
pub(crate) struct Rec<'a, const N: usize>(&'a [u8; N]);

impl<'a, const N: usize> Rec<'a, N> {
    /// The `N` bytes at `off` in `d`, if they are all there.
    pub(crate) fn at(d: &'a [u8], off: usize) -> Option<Self> {
        d.get(off..off.checked_add(N)?)?.try_into().ok().map(Rec)
    }
    pub(crate) fn bytes<const AT: usize, const W: usize>(self) -> [u8; W] {
        const { assert!(AT + W <= N, "field outside its record") };
        let mut b = [0; W];
        b.copy_from_slice(&self.0[AT..AT + W]);
        b
    }
    pub(crate) fn u8<const AT: usize>(self) -> u8 {
        u8::from_le_bytes(self.bytes::<AT, 1>())
    }
    pub(crate) fn u16<const AT: usize>(self) -> u16 {
        u16::from_le_bytes(self.bytes::<AT, 2>())
    }
    pub(crate) fn u32<const AT: usize>(self) -> u32 {
        u32::from_le_bytes(self.bytes::<AT, 4>())
    }
    pub(crate) fn u64<const AT: usize>(self) -> u64 {
        u64::from_le_bytes(self.bytes::<AT, 8>())
    }
}

/// Field readers that turn a short read into `Truncated` (callers check ranges first, so these
/// errors are a second line of defence).
pub(super) fn field_u16(d: &[u8], base: usize, rel: usize, what: &'static str) -> Result<u16, ImageError> {
    let off = base.checked_add(rel).ok_or_else(|| overflow(what))?;
    read_u16(d, off).ok_or_else(|| short(what, (off as u64).saturating_add(2), d))
}
pub(super) fn field_u32(d: &[u8], base: usize, rel: usize, what: &'static str) -> Result<u32, ImageError> {
    let off = base.checked_add(rel).ok_or_else(|| overflow(what))?;
    read_u32(d, off).ok_or_else(|| short(what, (off as u64).saturating_add(4), d))
}
pub(super) fn field_u64(d: &[u8], base: usize, rel: usize, what: &'static str) -> Result<u64, ImageError> {
    let off = base.checked_add(rel).ok_or_else(|| overflow(what))?;
    read_u64(d, off).ok_or_else(|| short(what, (off as u64).saturating_add(8), d))
}

pub(super) fn short(what: &'static str, need: u64, d: &[u8]) -> ImageError {
    ImageError::Truncated { what, need, have: d.len() as u64 }
}
pub(super) fn overflow(what: &'static str) -> ImageError {
    ImageError::Malformed(cold_format!("{what}: offset arithmetic overflows"))
}

/// Checks that `off..off+size` lies within `d`; returns the end.
#[inline]
pub(crate) fn check_range(d: &[u8], off: u64, size: u64, what: &'static str) -> Result<u64, ImageError> {
    match off.checked_add(size) {
        Some(end) if end <= d.len() as u64 => Ok(end),
        _ => Err(range_error(d, off, size, what)),
    }
}

/// Why `off..off+size` does not lie within `d` (kept out of line: the callers' loops stay small).
#[cold]
#[inline(never)]
fn range_error(d: &[u8], off: u64, size: u64, what: &'static str) -> ImageError {
    match off.checked_add(size) {
        Some(end) => short(what, end, d),
        None => ImageError::Malformed(cold_format!("{what}: offset {off:#x} + size {size:#x} overflows")),
    }
}

pub(super) fn to_usize(v: u64, what: &'static str) -> Result<usize, ImageError> {
    usize::try_from(v).map_err(|_| ImageError::Malformed(cold_format!("{what}: {v:#x} does not fit in memory")))
}
