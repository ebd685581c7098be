//! NVRTC (libnvrtc.so.13, else .so.12), opened at run time with its builtins library found
//! beside it; entry points resolved by name once.

use crate::dl::{self, Component, Lib};
use crate::error::{Error, Result, Status};
use crate::sys;
use std::ffi::CStr;
use std::sync::OnceLock;

crate::dl::symbol_table! {
    pub struct NvrtcFns {
        nvrtcVersion: PFN_nvrtcVersion = "nvrtcVersion",
        nvrtcGetErrorString: PFN_nvrtcGetErrorString = "nvrtcGetErrorString",
        nvrtcCreateProgram: PFN_nvrtcCreateProgram = "nvrtcCreateProgram",
        nvrtcDestroyProgram: PFN_nvrtcDestroyProgram = "nvrtcDestroyProgram",
        nvrtcCompileProgram: PFN_nvrtcCompileProgram = "nvrtcCompileProgram",
        nvrtcGetProgramLogSize: PFN_nvrtcGetProgramLogSize = "nvrtcGetProgramLogSize",
        nvrtcGetProgramLog: PFN_nvrtcGetProgramLog = "nvrtcGetProgramLog",
        nvrtcGetCUBINSize: PFN_nvrtcGetCUBINSize = "nvrtcGetCUBINSize",
        nvrtcGetCUBIN: PFN_nvrtcGetCUBIN = "nvrtcGetCUBIN",
        nvrtcGetPTXSize: PFN_nvrtcGetPTXSize = "nvrtcGetPTXSize",
        nvrtcGetPTX: PFN_nvrtcGetPTX = "nvrtcGetPTX",
        nvrtcGetLTOIRSize: PFN_nvrtcGetLTOIRSize = "nvrtcGetLTOIRSize",
        nvrtcGetLTOIR: PFN_nvrtcGetLTOIR = "nvrtcGetLTOIR",
        nvrtcAddNameExpression: PFN_nvrtcAddNameExpression = "nvrtcAddNameExpression",
        nvrtcGetLoweredName: PFN_nvrtcGetLoweredName = "nvrtcGetLoweredName",
        nvrtcGetNumSupportedArchs: PFN_nvrtcGetNumSupportedArchs = "nvrtcGetNumSupportedArchs",
        nvrtcGetSupportedArchs: PFN_nvrtcGetSupportedArchs = "nvrtcGetSupportedArchs",
    }
}

pub struct Nvrtc {
    pub lib: Lib,
    /// major*1000 + minor*10, like CUDA's own version numbers (13000 for 13.0).
    pub version: i32,
    pub f: NvrtcFns,
}

static NVRTC: OnceLock<std::result::Result<Nvrtc, Error>> = OnceLock::new();

pub fn nvrtc() -> Result<&'static Nvrtc> {
    NVRTC.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Nvrtc> {
    dl::open(Component::Nvrtc, |lib| {
        let f = NvrtcFns::resolve(&lib);
        let (mut major, mut minor) = (0, 0);
        match f.nvrtcVersion {
            // SAFETY: valid out-pointers.
            Some(v) => unsafe { v(&mut major, &mut minor) },
            // Every NVRTC has nvrtcVersion: a file without it is something else.
            None => return Err(Error::new(Status::NvrtcNotFound, "not NVRTC: the library has no nvrtcVersion")),
        };
        if major < 12 {
            return Err(Error::new(
                Status::UnsupportedVersion,
                format!("NVRTC {major}.{minor} found, cudyn needs 12.0 or newer"),
            ));
        }
        Ok(Nvrtc { lib, version: major * 1000 + minor * 10, f })
    })
}

impl Nvrtc {
    pub fn need<T: Copy>(&self, f: Option<T>, name: &str) -> Result<T> {
        f.ok_or_else(|| Error::new(Status::UnsupportedVersion, format!("{name} is missing from this NVRTC")))
    }

    pub fn describe(&self, r: sys::nvrtcResult) -> String {
        let text = self
            .f
            .nvrtcGetErrorString
            // SAFETY: returns a static string for any code.
            .map(|f| unsafe { f(r) })
            .filter(|p| !p.is_null())
            .map(|p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned());
        text.unwrap_or_else(|| format!("nvrtcResult {}", r.0))
    }

    pub fn check(&self, r: sys::nvrtcResult, status: Status, what: impl std::fmt::Display) -> Result<()> {
        if r.0 == 0 {
            return Ok(());
        }
        Err(Error::with_code(status, r.0 as i32, format!("{what}: {}", self.describe(r))))
    }

    /// The sm_XY numbers this NVRTC can target.
    pub fn supported_archs(&self) -> Vec<u32> {
        let (Some(num), Some(get)) = (self.f.nvrtcGetNumSupportedArchs, self.f.nvrtcGetSupportedArchs) else {
            return Vec::new();
        };
        let mut n = 0;
        // SAFETY: valid out-pointer.
        if unsafe { num(&mut n) }.0 != 0 || n <= 0 {
            return Vec::new();
        }
        let mut v = vec![0i32; n as usize];
        // SAFETY: v holds exactly n ints, as nvrtcGetNumSupportedArchs said.
        if unsafe { get(v.as_mut_ptr()) }.0 != 0 {
            return Vec::new();
        }
        v.into_iter().filter(|&a| a > 0).map(|a| a as u32).collect()
    }
}
