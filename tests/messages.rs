//! Messages read as cudyn's, not Rust's: no "(os error N)", no Rust enum names where a C user
//! knows a C name. Needs no GPU.
//!
//! Run with `cargo test --test messages`.

use cudyn::compile::{compile, CompileOptions};
use cudyn::kernel::Attribute;
use cudyn::{Api, CodeKind, Library, Status};
use std::path::Path;

#[test]
fn a_missing_image_file_is_no_such_file_or_directory() {
    let path = std::env::temp_dir().join(format!("cudyn-messages-{}-missing.fatbin", std::process::id()));
    let e = Library::load_file(&path, Api::Runtime).err().expect("loading a file that does not exist");
    assert_eq!(e.status, Status::Io, "{}", e.message);
    assert!(e.message.contains("no such file or directory"), "{}", e.message);
    assert!(e.message.contains(&path.display().to_string()), "{}", e.message);
    assert!(!e.message.contains("os error"), "{}", e.message);
}

#[test]
fn a_cache_folder_that_cannot_be_made_says_why_in_words() {
    let file = std::env::temp_dir().join(format!("cudyn-messages-{}-file", std::process::id()));
    std::fs::write(&file, b"a file, not a folder").unwrap();
    let e = cudyn::cache::Cache::at(file.join("cache"), 1 << 20).expect_err("a cache under a plain file");
    let text = cudyn::error::io_text(&e);
    let _ = std::fs::remove_file(&file);
    assert!(!text.contains("os error"), "{text}");
    assert!(text.to_lowercase().contains("not a directory"), "{text}");
}

#[test]
fn compiling_to_a_kind_that_is_not_code_names_the_c_constant() {
    for (kind, name) in [(CodeKind::Source, "CUDYN_CODE_SOURCE"), (CodeKind::Fatbin, "CUDYN_CODE_FATBIN")] {
        let opts = CompileOptions { target: Some(kind), ..Default::default() };
        let f = compile("__global__ void k() {}", "k.cu", &opts).expect_err("not a compile target");
        assert_eq!(f.error.status, Status::InvalidArgument);
        assert!(f.error.message.contains(&format!("cannot compile to {name}")), "{}", f.error.message);
        assert!(
            f.error.message.contains("CUDYN_CODE_CUBIN, CUDYN_CODE_PTX or CUDYN_CODE_LTOIR"),
            "{}",
            f.error.message
        );
        assert!(!f.error.message.contains(&format!("{kind:?}")), "{}", f.error.message);
    }
}

#[test]
fn kernel_attributes_are_named_as_in_cudyn_h() {
    let header = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/cudyn.h")).unwrap();
    let mut seen = 0;
    for line in header.lines() {
        let Some(rest) = line.trim().strip_prefix("CUDYN_KERNEL_ATTR_") else { continue };
        let Some((name, value)) = rest.trim_end_matches(',').split_once(" = ") else { continue };
        let a = Attribute::from_c(value.parse().unwrap()).unwrap_or_else(|| panic!("{line}"));
        assert_eq!(a.c_name(), format!("CUDYN_KERNEL_ATTR_{name}"));
        seen += 1;
    }
    assert!(seen >= 16, "found {seen} attributes in cudyn.h");
}
