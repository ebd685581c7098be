//! One CUDA library opened on first use, with its entry points resolved once: the shape the
//! driver, the runtime, NVRTC and nvJitLink share. What differs between them is only how the
//! table is resolved and which versions are accepted (each module's `accept`).

use super::dl::{self, Component, Lib};
use crate::error::{Error, Result, Status};
use std::sync::OnceLock;

/// 12080 -> "12.8".
pub fn fmt_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// An opened library: the file, its version (major*1000 + minor*10, as CUDA counts), its entry
/// points (`F`: one `Option<PFN>` per symbol, None where this version lacks it; reported when
/// needed) and whatever else its API keeps for the process (`S`: the driver's contexts and
/// compute capabilities; nothing for the others).
pub struct Opened<F, S = ()> {
    /// What was opened.
    pub lib: Lib,
    /// e.g. 13000 for CUDA 13.0.
    pub version: i32,
    /// The entry points.
    pub f: F,
    pub(crate) state: S,
    component: Component,
}

impl<F, S> Opened<F, S> {
    /// The entry point `f` (named `name`), or UnsupportedVersion naming it and this library.
    pub fn need<T: Copy>(&self, f: Option<T>, name: &str) -> Result<T> {
        f.ok_or_else(|| {
            Error::new(
                Status::UnsupportedVersion,
                format!("{name} is missing from {} {}", self.component.human(), fmt_version(self.version)),
            )
        })
    }
}

/// What a library's `accept` makes of a candidate file: its version, its entry points and its
/// process-wide state; an Err refuses the file (too old, not the library it claims to be) and
/// the search goes on.
pub(crate) type Accept<F, S> = fn(&Lib) -> Result<(i32, F, S)>;

/// A library opened on first use (by `dl::open`'s search, each candidate put to `accept`), kept
/// for the process, and its outcome too: a library that could not be opened is not searched
/// for again, and every later call gets the same error.
pub(crate) struct Lazy<F: 'static, S: 'static = ()> {
    component: Component,
    accept: Accept<F, S>,
    cell: OnceLock<Result<Opened<F, S>>>,
}

impl<F: Send + Sync, S: Send + Sync> Lazy<F, S> {
    pub(crate) const fn new(component: Component, accept: Accept<F, S>) -> Self {
        Lazy { component, accept, cell: OnceLock::new() }
    }

    /// The library, opened now if this is the first call.
    pub(crate) fn get(&'static self) -> Result<&'static Opened<F, S>> {
        if let Some(o) = self.ready() {
            return Ok(o); // no initialisation check, no clone
        }
        self.opened().as_ref().map_err(Clone::clone)
    }

    /// The outcome of opening the library, opening it now if this is the first call (counted
    /// as an initialisation under way for fork(): src/fork.rs).
    pub(crate) fn opened(&'static self) -> &'static Result<Opened<F, S>> {
        crate::fork::once(&self.cell, || {
            dl::open(self.component, |lib| {
                let (version, f, state) = (self.accept)(&lib)?;
                Ok(Opened { lib, version, f, state, component: self.component })
            })
        })
    }

    /// The library if it is open already (one load; for the launch path).
    #[inline]
    pub(crate) fn ready(&'static self) -> Option<&'static Opened<F, S>> {
        self.cell.get()?.as_ref().ok()
    }
}
