//! nvJitLink (libnvJitLink.so.13, else .so.12), opened at run time; entry points resolved by
//! their unversioned exported names, whose prototypes match the header's versioned ones.

use crate::dl::{self, Component, Lib};
use crate::error::{Error, Result, Status};
use std::sync::OnceLock;

crate::dl::symbol_table! {
    pub struct JitLinkFns {
        version: PFN_nvJitLinkVersion = "nvJitLinkVersion",
        create: PFN___nvJitLinkCreate_13_0 = "nvJitLinkCreate",
        destroy: PFN___nvJitLinkDestroy_13_0 = "nvJitLinkDestroy",
        add_data: PFN___nvJitLinkAddData_13_0 = "nvJitLinkAddData",
        complete: PFN___nvJitLinkComplete_13_0 = "nvJitLinkComplete",
        cubin_size: PFN___nvJitLinkGetLinkedCubinSize_13_0 = "nvJitLinkGetLinkedCubinSize",
        cubin: PFN___nvJitLinkGetLinkedCubin_13_0 = "nvJitLinkGetLinkedCubin",
        error_log_size: PFN___nvJitLinkGetErrorLogSize_13_0 = "nvJitLinkGetErrorLogSize",
        error_log: PFN___nvJitLinkGetErrorLog_13_0 = "nvJitLinkGetErrorLog",
        info_log_size: PFN___nvJitLinkGetInfoLogSize_13_0 = "nvJitLinkGetInfoLogSize",
        info_log: PFN___nvJitLinkGetInfoLog_13_0 = "nvJitLinkGetInfoLog",
    }
}

pub struct JitLink {
    pub lib: Lib,
    /// major*1000 + minor*10.
    pub version: i32,
    pub f: JitLinkFns,
}

static JITLINK: OnceLock<std::result::Result<JitLink, Error>> = OnceLock::new();

pub fn jitlink() -> Result<&'static JitLink> {
    JITLINK.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<JitLink> {
    dl::open(Component::NvJitLink, |lib| {
        let f = JitLinkFns::resolve(&lib);
        let (mut major, mut minor) = (0u32, 0u32);
        match f.version {
            // SAFETY: valid out-pointers.
            Some(v) => unsafe { v(&mut major, &mut minor) },
            None => {
                return Err(Error::new(Status::UnsupportedVersion, "library has no nvJitLinkVersion (needs 12.3+)"))
            }
        };
        if f.create.is_none() || f.complete.is_none() {
            return Err(Error::new(
                Status::UnsupportedVersion,
                format!("nvJitLink {major}.{minor} lacks unversioned entry points"),
            ));
        }
        Ok(JitLink { lib, version: (major * 1000 + minor * 10) as i32, f })
    })
}

impl JitLink {
    pub fn need<T: Copy>(&self, f: Option<T>, name: &str) -> Result<T> {
        f.ok_or_else(|| Error::new(Status::UnsupportedVersion, format!("{name} is missing from this nvJitLink")))
    }
}
