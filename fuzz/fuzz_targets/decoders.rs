//! cudyn's LZ4 and zstd decoders against liblz4 and libzstd on any input: the first byte picks
//! the method, the next two a declared size offset, the rest is the stream. Both refuse, or
//! both make the same bytes (tests/decoders/reference.rs, also run by cargo test).
#![no_main]

#[path = "../../tests/decoders/reference.rs"]
mod reference;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let [pick, a, b, stream @ ..] = data else { return };
    let zstd = pick & 1 != 0;
    // Sizes near what the stream could make: the declared size is the stream's own content
    // size where it has one (zstd), else a few times its length, moved by the two bytes.
    let base = if zstd { zstd_safe::get_frame_content_size(stream).ok().flatten().unwrap_or(0) as usize } else { stream.len() * 3 };
    let delta = i32::from(i16::from_le_bytes([*a, *b]));
    let size = (base as i64 + i64::from(if pick & 2 != 0 { delta % 16 } else { delta })).clamp(0, 1 << 22) as usize;
    reference::agree(zstd, stream, size);
});
