//! A compile cache you can ship: a bundle exported in one folder is imported (or used as a
//! read-only layer) in another and hits there, in a fresh process, without loading NVRTC, when
//! the inputs are the same; a damaged or forged bundle is refused with a clear message and
//! imports nothing; a read-only layer is never written, on a hit, a miss or a damaged entry.
//!
//! Run with `source scripts/env.sh && cargo test --test cache_bundle`.

mod common;

use common::*;
use cudyn::cache::{encode_entry, write_bundle, Cache, Key};
use cudyn::compile::{compile_with, CompileOptions, Compiled};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

const SOURCE: &str = "#include \"values.h\"\n#include <sub/more.h>\nextern \"C\" __global__ void k(int* out) { out[0] = VALUE; out[1] = MORE; }\n";

/// The project in `root`: its source and headers, the same bytes wherever it is.
fn project(root: &Path) -> PathBuf {
    fs::create_dir_all(root.join("include/sub")).unwrap();
    fs::write(root.join("include/values.h"), "#pragma once\n#define VALUE 0x13579\n").unwrap();
    fs::write(root.join("include/sub/more.h"), "#pragma once\n#define MORE 0x24680\n").unwrap();
    fs::write(root.join("kernel.cu"), SOURCE).unwrap();
    root.to_path_buf()
}

fn opts(root: &Path) -> CompileOptions {
    CompileOptions {
        options: vec![format!("-I{}", root.join("include").display()), "-arch=sm_90".into()],
        ..Default::default()
    }
}

fn compile(c: &Cache, root: &Path) -> Compiled {
    compile_with(SOURCE, "kernel.cu", &opts(root), Some(c))
        .unwrap_or_else(|f| panic!("{:?}: {}\n{}", f.error.status, f.error.message, f.log))
}

fn nvrtc_mapped() -> bool {
    fs::read_to_string("/proc/self/maps").unwrap().lines().any(|l| l.contains("libnvrtc"))
}

fn var(k: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| panic!("{k} not set"))
}

/// What a folder holds, to the inode and change time: equal snapshots mean nothing was written,
/// renamed, removed, touched or chmod'ed in it.
fn snapshot(dir: &Path) -> Vec<(String, u64, u64, i64, i64, i64, i64)> {
    let mut v: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = fs::symlink_metadata(e.path()).unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                m.ino(),
                m.size(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            )
        })
        .collect();
    let m = fs::metadata(dir).unwrap();
    v.push((".".into(), m.ino(), m.size(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()));
    v.sort();
    v
}

/// The child: in the project copied to `B_ROOT`, working there, with the bundle `B_BUNDLE`
/// imported into an empty cache (`B_HOW=import`) or added as a layer (`B_HOW=layer`): a hit,
/// the code of the first folder, and no NVRTC loaded.
fn child() {
    require_ld_library_path_unset();
    let root = PathBuf::from(var("B_ROOT"));
    std::env::set_current_dir(&root).unwrap();
    let c = Cache::at(root.join("cache"), 64 << 20).unwrap();
    let bundle = PathBuf::from(var("B_BUNDLE"));
    match var("B_HOW").as_str() {
        "import" => {
            let r = cudyn::compile::import_bundle(&c, &bundle).unwrap();
            assert_eq!((r.added, r.present), (1, 0));
        }
        _ => c.add_layer(&bundle).unwrap(),
    }
    let r = compile(&c, &root);
    assert!(r.from_cache, "the bundle made in another folder did not hit here");
    assert!(!nvrtc_mapped(), "a hit from the bundle loaded NVRTC");
    assert_eq!(r.code, fs::read(var("B_CODE")).unwrap(), "not the code the first folder compiled");
    assert_eq!(c.stats().hits, 1);
}

#[test]
fn a_bundle_made_in_one_folder_hits_in_another_without_nvrtc() {
    const TEST: &str = "a_bundle_made_in_one_folder_hits_in_another_without_nvrtc";
    if child_mode().is_some() {
        return child();
    }
    require_project_env();
    let td = TempDir::new("bundle-reloc");
    let a = project(&td.join("build/here"));
    let c = Cache::at(a.join("cache"), 64 << 20).unwrap();
    let first = compile(&c, &a);
    assert!(!first.from_cache);
    let bundle = td.join("kernels.cudyn-bundle");
    assert_eq!(cudyn::compile::export_bundle(&c, &bundle).unwrap(), 1);
    let code = td.join("code.cubin");
    fs::write(&code, &first.code).unwrap();
    for how in ["import", "layer"] {
        let b = project(&td.join(&format!("installed/elsewhere/{how}")));
        let env = [
            ("B_ROOT", b.to_str().unwrap()),
            ("B_BUNDLE", bundle.to_str().unwrap()),
            ("B_HOW", how),
            ("B_CODE", code.to_str().unwrap()),
        ];
        expect_child_ok(spawn_child(TEST, how, &env), how);
    }
    // Different inputs do not hit: a header that differs in the other folder is compiled.
    let b = project(&td.join("installed/changed"));
    fs::write(b.join("include/sub/more.h"), "#pragma once\n#define MORE 0x11111\n").unwrap();
    let c2 = Cache::at(b.join("cache"), 64 << 20).unwrap();
    c2.add_layer(&bundle).unwrap();
    let r = compile(&c2, &b);
    assert!(
        !r.from_cache && contains(&r.code, &0x11111u32.to_le_bytes()),
        "a changed header was served from the bundle"
    );
}

/// A bundle of `entries` (key, payload): built with the crate's own writer, so that every outer
/// checksum is right and only what the case changes is wrong.
fn bundle_of(path: &Path, entries: Vec<(Key, Vec<u8>)>) {
    let mut e = entries;
    let mut out = Vec::new();
    write_bundle(&mut out, &mut e).unwrap();
    fs::write(path, out).unwrap();
}

/// A compile payload as the compiler stores it (sm, log, lowered names, code) around `code`.
fn payload(code: &[u8]) -> Vec<u8> {
    let mut v = 90u32.to_le_bytes().to_vec();
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(code);
    v
}

#[test]
fn damaged_or_forged_bundles_are_refused_and_import_nothing() {
    require_project_env();
    let td = TempDir::new("bundle-forged");
    let a = project(&td.join("a"));
    let c = Cache::at(a.join("cache"), 64 << 20).unwrap();
    let first = compile(&c, &a);
    let good = td.join("good.cudyn-bundle");
    cudyn::compile::export_bundle(&c, &good).unwrap();
    let bytes = fs::read(&good).unwrap();
    // The good bundle's one entry, to forge with.
    let b = cudyn::cache::Bundle::open(fs::File::open(&good).unwrap(), &good, 1 << 30).unwrap();
    let key = b.records()[0].key;
    let real = b.entry_bytes(&key).unwrap();
    let other = Key([0x5a; 32]);
    let mut cases: Vec<(&str, PathBuf, &str)> = Vec::new();
    let mut add = |name: &'static str, why: &'static str, f: &dyn Fn(&Path)| {
        let p = td.join(name);
        f(&p);
        cases.push((name, p, why));
    };
    add("truncated", "trailer", &|p| fs::write(p, &bytes[..bytes.len() - 7]).unwrap());
    add("flipped-payload-byte", "checksum", &|p| {
        let mut m = bytes.clone();
        let at = m.len() - 100;
        m[at] ^= 1;
        fs::write(p, m).unwrap();
    });
    add("flipped-index-byte", "index", &|p| {
        let mut m = bytes.clone();
        m[64 + 40] ^= 1;
        fs::write(p, m).unwrap();
    });
    add("not-a-bundle", "CUDYNBDL", &|p| fs::write(p, b"just some file that is not a bundle. ".repeat(8)).unwrap());
    // Forged: every outer checksum recomputed, yet what is inside does not hold.
    add("inner-checksum-wrong", "checksum", &|p| {
        let mut e = real.clone();
        let last = e.len() - 1;
        e[last] ^= 1;
        bundle_of(p, vec![(key, e)]);
    });
    add("entry-under-another-key", "another key", &|p| bundle_of(p, vec![(other, real.clone())]));
    add("not-a-compile-result", "not a compile result", &|p| {
        bundle_of(p, vec![(key, encode_entry(&key, b"not what a compile stores"))])
    });
    add("code-refused", "refused", &|p| {
        let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
        elf.resize(256, 0xee);
        bundle_of(p, vec![(key, encode_entry(&key, &payload(&elf)))])
    });
    // One bad entry among good ones: none of them is imported.
    add("one-bad-among-good", "not a compile result", &|p| {
        bundle_of(p, vec![(key, real.clone()), (other, encode_entry(&other, b"junk"))])
    });
    for (name, path, why) in cases {
        let fresh = Cache::at(td.join(&format!("import-{name}")), 64 << 20).unwrap();
        let e = cudyn::compile::import_bundle(&fresh, &path).expect_err(name);
        assert!(
            e.message.contains(path.to_str().unwrap()),
            "{name}: the message does not name the file: {}",
            e.message
        );
        assert!(e.message.contains(why), "{name}: the message does not say why ({why}): {}", e.message);
        assert_eq!(fresh.stats().entries, 0, "{name}: something was imported");
        // Used as a layer instead, it never gives a compile anything but the right code: a
        // damaged entry is a miss, and code that fails cudyn's checks is never served.
        let layered = Cache::at(td.join(&format!("layer-{name}")), 64 << 20).unwrap();
        if layered.add_layer(&path).is_ok() {
            if name == "entry-under-another-key" {
                assert!(layered.get(&other).is_none(), "{name}: an entry filed under another key was served");
            }
            let r = compile(&layered, &a);
            assert_eq!(r.code, first.code, "{name}: a compile through the layer got other code");
        }
    }
    // The good one imports, and a second import adds nothing.
    let fresh = Cache::at(td.join("import-good"), 64 << 20).unwrap();
    let r = cudyn::compile::import_bundle(&fresh, &good).unwrap();
    assert_eq!((r.added, r.present), (1, 0));
    let r = cudyn::compile::import_bundle(&fresh, &good).unwrap();
    assert_eq!((r.added, r.present), (0, 1));
    // A bundle larger than the cache's bound is refused whole.
    let small = Cache::at(td.join("import-small"), 1024).unwrap();
    let e = cudyn::compile::import_bundle(&small, &good).expect_err("over the bound");
    assert!(e.message.contains("bound") && small.stats().entries == 0, "{}", e.message);
}

#[test]
fn a_read_only_layer_is_never_written() {
    require_project_env();
    let td = TempDir::new("bundle-layer");
    let a = project(&td.join("a"));
    // A folder layer: a cache folder filled by another cache, then only read.
    let layer = td.join("layer");
    let filler = Cache::at(&layer, 64 << 20).unwrap();
    compile(&filler, &a);
    drop(filler);
    // One damaged entry in it too, and a folder planted at an entry's name.
    let junk_key = Key([0x77; 32]);
    fs::write(layer.join(format!("{}.cudyn", junk_key.hex())), b"damaged").unwrap();
    fs::create_dir(layer.join(format!("{}.cudyn", Key([0x66; 32]).hex()))).unwrap();
    let bundle = td.join("b.cudyn-bundle");
    let exporter = Cache::at(td.join("exporter"), 64 << 20).unwrap();
    compile(&exporter, &a);
    cudyn::compile::export_bundle(&exporter, &bundle).unwrap();
    let before = snapshot(&layer);
    let bundle_before = fs::metadata(&bundle).unwrap();
    for use_bundle in [false, true] {
        let w = td.join(if use_bundle { "w-bundle" } else { "w-folder" });
        let c = Cache::at(&w, 64 << 20).unwrap();
        c.add_layer(if use_bundle { &bundle } else { &layer }).unwrap();
        // A hit from the layer: nothing is written to the writable folder either.
        let hit = compile(&c, &a);
        assert!(hit.from_cache, "use_bundle={use_bundle}");
        assert_eq!(c.stats().entries, 0, "a hit from a layer was copied into the folder");
        // A miss (another source): compiled and stored in the writable folder, not the layer.
        let miss = compile_with(&SOURCE.replace("out[1]", "out[2]"), "kernel.cu", &opts(&a), Some(&c)).unwrap();
        assert!(!miss.from_cache);
        assert_eq!(c.stats().entries, 1);
        // The damaged and planted entries are misses, left as they are.
        assert!(c.get(&junk_key).is_none() && c.get(&Key([0x66; 32])).is_none());
        // The memory tier answers the next same compile.
        assert!(compile(&c, &a).from_cache);
    }
    assert_eq!(snapshot(&layer), before, "the folder layer was written");
    let after = fs::metadata(&bundle).unwrap();
    assert_eq!(
        (after.ino(), after.size(), after.mtime_nsec(), after.ctime(), after.ctime_nsec()),
        (
            bundle_before.ino(),
            bundle_before.size(),
            bundle_before.mtime_nsec(),
            bundle_before.ctime(),
            bundle_before.ctime_nsec()
        ),
        "the bundle layer was written"
    );
    // A layer others can write is refused, with the reason.
    let open = td.join("open-layer");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let c = Cache::at(td.join("w3"), 64 << 20).unwrap();
    let e = c.add_layer(&open).unwrap_err();
    assert!(e.to_string().contains("writable by group or others"), "{e}");
    let e = c.add_layer(Path::new("relative/layer")).unwrap_err();
    assert!(e.to_string().contains("absolute"), "{e}");
}

/// A FIFO, a folder or a device given as the bundle to import is refused at once: the import
/// opened it blocking, and a FIFO held the call (and `cudyn cache import`) forever.
#[test]
fn an_import_of_what_is_not_a_file_is_refused_at_once() {
    let td = TempDir::new("bundle-fifo");
    let c = std::sync::Arc::new(Cache::at(td.join("cache"), 1 << 20).unwrap());
    let fifo = td.join("pipe.cudyn-bundle");
    let cpath = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    for p in [fifo.clone(), td.path().to_path_buf(), PathBuf::from("/dev/zero")] {
        let (tx, rx) = std::sync::mpsc::channel();
        let c2 = std::sync::Arc::clone(&c);
        let p2 = p.clone();
        std::thread::spawn(move || {
            let _ = tx.send(cudyn::compile::import_bundle(&c2, &p2).map(|r| r.added));
        });
        match rx.recv_timeout(std::time::Duration::from_secs(5)) {
            Ok(r) => {
                let e = r.expect_err("refused");
                assert!(e.message.contains("not a regular file") || e.message.contains("directory"), "{}", e.message);
            }
            Err(_) => {
                // Let the blocked thread go, so the process can exit.
                let _ = fs::OpenOptions::new().write(true).open(&fifo);
                panic!("importing {} did not return within 5 s", p.display());
            }
        }
    }
}
