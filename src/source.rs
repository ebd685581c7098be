//! Loading straight from CUDA C++ source: compile for the present GPU (through the cache),
//! never producing PTX the driver would refuse, then load through the chosen API.

use crate::compile::{self, CompileFailure, CompileOptions, Compiled};
use crate::cuda::driver::driver_if_usable;
use crate::cuda::nvrtc::nvrtc;
use crate::library::{Api, Library};

/// Compile and load; the compilation (with its log and lowered names) comes back too.
pub fn load_source(
    source: &str,
    name: &str,
    opts: &CompileOptions,
    api: Api,
) -> Result<(Library, Compiled), CompileFailure> {
    let nv = nvrtc()?;
    compile::check_loadable(nv.version, driver_if_usable().map(|d| d.version), opts)?;
    let c = compile::compile(source, name, opts)?;
    match Library::load_data(&c.code, api) {
        Ok(lib) => Ok((lib, c)),
        Err(e) => Err(CompileFailure {
            error: e.context(format_args!("loading the code compiled from '{name}'")),
            log: c.log,
        }),
    }
}
