//! cudyn.h section "Kernels by C++ name": a kernel found by its symbol or by its C++ name or
//! signature (`axpy<float>`), and a symbol's C++ name.

use super::compile::{cudyn_buffer, give};
use super::{cstr, ffi, out};
use crate::handles::{KernelHandle, LibraryHandle};
use crate::launch::RawApi;
use crate::library::Api;
use crate::Status;
use std::ffi::c_char;

/// Look up a kernel by its symbol or, failing that, by its C++ name or signature.
///
/// First exactly as cudyn_library_get_kernel() (CUDA's own lookup of the extern "C" or
/// mangled name, as fast). If CUDA finds no kernel of that name, `name` is read as C++ and
/// matched against the demangled names of the library's kernels, both written in one
/// spelling (whitespace, `unsigned` for `unsigned int`, `const T` for `T const`, `int64_t` for
/// `long`, `16u` for `16`, ...):
///   - "axpy<float>" names the instance axpy<float> of a template (template arguments are
///     never deduced: "axpy" alone does not);
///   - "scale(double*, double)" names one overload by its parameters;
///   - namespaces may be left out ("take" for ns::inner::take) or given from the root
///     ("::axpy<float>"), and so may versioned inline namespaces (cuda::std::__4) and
///     trailing template arguments (the defaults, which the binary does not record);
///   - when several kernels fit, the closest fit wins (all namespaces given beats some left
///     out, which beats inline namespaces skipped, which beats template arguments left out);
///     a tie is CUDYN_ERROR_AMBIGUOUS_NAME and the message lists the kernels that fit, each
///     with its symbol.
///
/// The names come from CUDA (cuLibraryEnumerateKernels and cuKernelGetName: driver 12.4+ or
/// runtime 12.8+), so they are the names CUDA finds in this library on this GPU; the last
/// libraries' names are kept demangled, so naming many kernels of one library demangles each
/// once. A declaration may be given as it is written: parameter names, `template`,
/// `__global__`, `void` and a trailing `;` are ignored.
///
/// @param library A live library.
/// @param name A symbol, or a C++ name or signature (UTF-8, at most 64 KiB).
/// @param api The API that looks the kernel up.
/// @param[out] kernel CUDA's own handle, as from cudyn_library_get_kernel(). Unchanged on
///             failure.
/// @return CUDYN_SUCCESS; CUDYN_ERROR_NOT_FOUND (no kernel fits; the message lists the kernels
///         of that base name, if any); CUDYN_ERROR_AMBIGUOUS_NAME (several fit equally well);
///         CUDYN_ERROR_INVALID_ARGUMENT (NULL, an unloaded library, a name that is neither a
///         symbol of the library nor C++, such as "axpy<float"); CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_find_kernel(
    library: LibraryHandle,
    name: *const c_char,
    api: RawApi,
    kernel: *mut KernelHandle,
) -> Status {
    ffi!({
        let api = Api::from_c_arg(api.into(), "api")?;
        // SAFETY: NUL-terminated name, writable or NULL output (caller's contract).
        let (n, o) = unsafe { (cstr(name, "name")?, out(kernel, "kernel")?) };
        // SAFETY: a live library (caller's contract).
        *o = unsafe { crate::names::kernel_by_name(library, n, api) }?.as_raw();
        Ok(())
    })
}

/// The C++ name of a kernel symbol, as cudyn_library_find_kernel() shows and matches it:
/// "axpy<float>(float*, float, int)" for "_Z4axpyIfEvPT_S0_i" (no return type: kernels return
/// void), with relocatable device code's "__nv_static_..." prefix removed. Needs no GPU.
///
/// @param symbol A kernel's symbol, e.g. from cudyn_kernel_name().
/// @param[out] name Receives the C++ name, NUL-terminated; free it with cudyn_buffer_free().
///             Unchanged on failure.
/// @return CUDYN_SUCCESS; CUDYN_ERROR_NOT_FOUND when `symbol` is not a mangled C++ name (an
///         extern "C" kernel's name is its own C name) or cannot be demangled within
///         cpp_demangle's limits; CUDYN_ERROR_INVALID_ARGUMENT (NULL, not UTF-8).
#[no_mangle]
pub unsafe extern "C" fn cudyn_demangle(symbol: *const c_char, name: *mut cudyn_buffer) -> Status {
    ffi!({
        // SAFETY: NUL-terminated symbol, writable or NULL output (caller's contract).
        let (s, o) = unsafe { (super::utf8(symbol, "symbol")?, out(name, "name")?) };
        let d = crate::names::demangle(s)
            .ok_or_else(|| crate::Error::new(Status::NotFound, format!("'{s}' is not a mangled C++ name")))?;
        // SAFETY: `o` is a writable cudyn_buffer.
        unsafe { give(o, d.as_bytes()) }
    })
}
