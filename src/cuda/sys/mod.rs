//! Raw CUDA declarations: the bindgen output for the pinned headers (generated, never edited)
//! and nothing else. The only place with CUDA prototypes; they are pointer types, never linked.

#[allow(clippy::all, unused_imports)]
#[rustfmt::skip]
mod cuda;
pub use cuda::*;
