//! Prepares a folder of real-world images for the GPU comparison (cpp-tests/bench/corpus_load.cu):
//! for each cubin or fatbin in IN, writes to OUT the image itself, `<name>.globals` (the
//! `__device__`/`__constant__`/`__managed__` variables of the cubins cudyn hands CUDA on a GPU of
//! compute capability SM, one name a line, which corpus_load looks up through raw CUDA and through
//! cudyn and compares), and `<name>.handed` (the image cudyn builds for that GPU, so raw CUDA can
//! be timed on it too). Runs on a machine without a GPU.
//!
//!   cargo run --release --example prepare_images -- SM IN OUT [MAX_MIB] [--no-handed]
//!
//! MAX_MIB bounds the bytes written (images taken in name order). `--no-handed` leaves out the
//! built images (to carry a larger corpus to the GPU). With OUT the same folder as IN, nothing
//! is copied: the files are added beside every image there (those with no code for SM too).

use std::collections::BTreeSet;
use std::path::Path;

fn u16_at(d: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(d.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(d: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(d: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(d.get(o..o + 8)?.try_into().ok()?))
}

fn cstr(d: &[u8], at: usize) -> Option<String> {
    let s = d.get(at..)?;
    let n = s.iter().position(|&b| b == 0)?;
    String::from_utf8(s[..n].to_vec()).ok()
}

/// Variables defined by a cubin (an image cudyn already checked, so a simple reader does).
fn variables(elf: &[u8], out: &mut BTreeSet<String>) -> Option<()> {
    let shoff = u64_at(elf, 40)? as usize;
    let shnum = u16_at(elf, 60)? as usize;
    let shstrndx = u16_at(elf, 62)? as usize;
    let sh = |i: usize| shoff + i * 64;
    let shstr = u64_at(elf, sh(shstrndx) + 24)? as usize;
    let name_of = |i: usize| cstr(elf, shstr + u32_at(elf, sh(i))? as usize);
    for i in 0..shnum {
        if u32_at(elf, sh(i) + 4)? != 2 {
            continue; // SHT_SYMTAB
        }
        let (off, size, link) =
            (u64_at(elf, sh(i) + 24)? as usize, u64_at(elf, sh(i) + 32)? as usize, u32_at(elf, sh(i) + 40)? as usize);
        let strs = u64_at(elf, sh(link) + 24)? as usize;
        for s in (off..off + size).step_by(24) {
            let info = *elf.get(s + 4)?;
            let shndx = u16_at(elf, s + 6)? as usize;
            // STT_OBJECT defined in a section of variables (a module's own `__device__` and
            // `__constant__` variables are local symbols unless built with -rdc).
            if info & 0xf != 1 || shndx == 0 || shndx >= shnum {
                continue;
            }
            let section = name_of(shndx).unwrap_or_default();
            if !(section.starts_with(".nv.global")
                || section.starts_with(".nv.constant")
                || section.contains("managed"))
            {
                continue;
            }
            if let Some(name) = cstr(elf, strs + u32_at(elf, s)? as usize) {
                out.insert(name);
            }
        }
    }
    Some(())
}

/// The cubins of a built image (a cubin, or a fatbin of plain entries).
fn cubins(image: &[u8]) -> Vec<&[u8]> {
    if image.starts_with(b"\x7fELF") {
        return vec![image];
    }
    let mut v = Vec::new();
    let end = 16 + u64_at(image, 8).unwrap_or(0) as usize;
    let mut at = 16;
    while at + 64 <= end {
        let (hs, ps) = (u32_at(image, at + 4).unwrap_or(0) as usize, u64_at(image, at + 8).unwrap_or(0) as usize);
        if hs == 0 {
            break;
        }
        if u16_at(image, at) == Some(2) {
            if let Some(p) = image.get(at + hs..at + hs + ps) {
                v.push(p);
            }
        }
        at += hs + ps;
    }
    v
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: prepare_images SM IN OUT [MAX_MIB]");
        std::process::exit(2);
    }
    let sm: u32 = args[1].parse().expect("SM: a number such as 90");
    let (input, output) = (Path::new(&args[2]), Path::new(&args[3]));
    let handed = !args.iter().any(|a| a == "--no-handed");
    let cap =
        args.get(4).filter(|a| *a != "--no-handed").map_or(u64::MAX, |m| m.parse::<u64>().expect("MAX_MIB") << 20);
    std::fs::create_dir_all(output).expect("creating OUT");
    let in_place = input.canonicalize().ok() == output.canonicalize().ok();
    let mut names: Vec<_> = std::fs::read_dir(input).expect("reading IN").map(|e| e.unwrap().path()).collect();
    names.sort();
    names.retain(|p| !p.to_string_lossy().ends_with(".globals") && !p.to_string_lossy().ends_with(".handed"));
    let (mut written, mut kept, mut refused, mut no_binary) = (0u64, 0, 0, 0);
    for path in names {
        let Ok(data) = std::fs::read(&path) else { continue };
        let built = match cudyn::image::prepare(&data, &[sm], false) {
            None => continue,
            Some(Ok(b)) => b,
            Some(Err(cudyn::image::PlanError::NoBinary { .. })) => {
                // Kept (a few): raw CUDA must find no code for the GPU either.
                no_binary += 1;
                if !in_place && no_binary <= 12 && written + data.len() as u64 <= cap {
                    let name = path.file_name().unwrap().to_string_lossy().into_owned();
                    std::fs::write(output.join(&name), &data).unwrap();
                    written += data.len() as u64;
                }
                continue;
            }
            Some(Err(cudyn::image::PlanError::Image(e))) => {
                refused += 1;
                eprintln!("refused {}: {e}", path.display());
                continue;
            }
        };
        let size = (data.len() + if handed { built.image.len() } else { 0 }) as u64;
        if written + size > cap {
            continue;
        }
        let mut vars = BTreeSet::new();
        for c in cubins(&built.image) {
            variables(c, &mut vars);
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !in_place {
            std::fs::write(output.join(&name), &data).unwrap();
        }
        if handed {
            std::fs::write(output.join(format!("{name}.handed")), &built.image).unwrap();
        }
        let list: String = vars.iter().map(|v| format!("{v}\n")).collect();
        std::fs::write(output.join(format!("{name}.globals")), list).unwrap();
        written += size;
        kept += 1;
    }
    println!(
        "{kept} images ({} MiB with their built images) in {}; {no_binary} with no code for sm_{sm}, {refused} refused",
        written >> 20,
        output.display()
    );
}
