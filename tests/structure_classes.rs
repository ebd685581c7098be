//! The structural classes of hostile image that crashed CUDA's loader through cudyn on the H200
//! in issue 21's independent mutation generator, each refused (and each accepted before the
//! check for it): a cubin with no section table, an altered `.note.nv.tkinfo` description, a
//! relocation of type 0xffffffff or into the NOBITS `.nv.global`, a callgraph caller past the
//! symbol table, instruction-offset lists past the kernel's code, and an sm_80 cubin labelled
//! sm_90 in its entry header and e_flags. Each starts from nvcc's own output, which passes.
//! CPU only; needs the project's nvcc (scripts/bootstrap.sh).

mod common;

use std::sync::OnceLock;

use common::{nvcc, TempDir};
use cudyn::fuzzing::{fatbin, fatbin_entry, Packing, FATBIN_FLAGS_PLAIN, FATBIN_KIND_ELF};
use cudyn::image::{inspect, CodeKind};

/// A kernel that uses mbarriers, a system-scope atomic and printf, so that ptxas writes the
/// instruction-offset attributes (EXIT, MBARRIER, SYSCALL, ...), an EXTERNS list, a callgraph
/// with calls and relocations of its code; and a device global (`.nv.global`, NOBITS).
const SOURCE: &str = r#"
#include <cstdio>
__device__ int g;
extern "C" __global__ void mb(unsigned long long *out, int n) {
  __shared__ unsigned long long bar;
  unsigned addr = (unsigned)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(addr), "r"(blockDim.x));
  __syncthreads();
  unsigned long long state;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(addr));
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(addr), "l"(state));
  if (threadIdx.x < n) { out[threadIdx.x] = state + g; atomicAdd_system((int *)out, 1); }
  if (n > 100) printf("n %d\n", n);
}
"#;

/// Cubins built so far, by their nvcc arguments.
type Built = std::sync::Mutex<Vec<(&'static [&'static str], Vec<u8>)>>;

/// The kernel built with nvcc `args` (cached per process), e.g. `-arch=sm_90`, or `-gencode`.
fn build(args: &'static [&'static str]) -> Vec<u8> {
    static CACHE: OnceLock<Built> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some((_, c)) = cache.lock().unwrap().iter().find(|(a, _)| *a == args) {
        return c.clone();
    }
    let dir = TempDir::new("structure-classes");
    let mut all = vec!["-cubin"];
    all.extend_from_slice(args);
    let c = nvcc(&dir.join("k.cu"), SOURCE, &dir.join("k.cubin"), &all);
    cache.lock().unwrap().push((args, c.clone()));
    c
}

fn sm90() -> Vec<u8> {
    build(&["-arch=sm_90"])
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}
fn put_u16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

/// Section headers: (index, header offset, name, type).
fn sections(b: &[u8]) -> Vec<(usize, usize, String, u32)> {
    let (shoff, n, strndx) = (u64_at(b, 40) as usize, u16_at(b, 60) as usize, u16_at(b, 62) as usize);
    let names = u64_at(b, shoff + 64 * strndx + 24) as usize;
    (0..n)
        .map(|i| {
            let h = shoff + 64 * i;
            let at = names + u32_at(b, h) as usize;
            let end = at + b[at..].iter().position(|&c| c == 0).unwrap();
            (i, h, String::from_utf8_lossy(&b[at..end]).into_owned(), u32_at(b, h + 4))
        })
        .collect()
}
fn section(b: &[u8], name: &str) -> (usize, usize) {
    let (i, h, _, _) = sections(b).into_iter().find(|s| s.2 == name).unwrap_or_else(|| panic!("no {name}"));
    (i, h)
}
fn body(b: &[u8], h: usize) -> (usize, usize) {
    (u64_at(b, h + 24) as usize, u64_at(b, h + 32) as usize)
}

/// The .nv.info records of section header `h`: (offset of the record, attribute, format, len).
fn records(b: &[u8], h: usize) -> Vec<(usize, u8, u8, usize)> {
    let (off, size) = body(b, h);
    let mut out = Vec::new();
    let mut p = off;
    while p + 4 <= off + size {
        let (format, attr, v) = (b[p], b[p + 1], u16_at(b, p + 2) as usize);
        let len = if format == 4 { v } else { 0 };
        out.push((p, attr, format, len));
        p += 4 + len;
    }
    out
}

fn refused(b: &[u8], why: &str) {
    match inspect(b) {
        Err(e) => assert!(e.to_string().contains(why), "refused, but for {e} (expected '{why}')"),
        Ok(i) => panic!("accepted a corrupted image ({:?}); expected '{why}'", i.kind),
    }
    // And as a compressed fatbin entry, as the loader would get it from a library.
    let f = fatbin(&[fatbin_entry(FATBIN_KIND_ELF, cubin_sm(b), FATBIN_FLAGS_PLAIN, b, Packing::Lz4)]);
    match inspect(&f) {
        Err(e) => assert!(e.to_string().contains(why), "wrapped: refused, but for {e} (expected '{why}')"),
        Ok(_) => panic!("accepted a corrupted image in a fatbin entry; expected '{why}'"),
    }
}
fn cubin_sm(b: &[u8]) -> u32 {
    if b.len() >= 52 {
        (u32_at(b, 48) >> 8) & 0xff
    } else {
        90
    }
}

#[test]
fn the_real_cubins_pass() {
    for c in [sm90(), build(&["-arch=sm_80"]), build(&["-gencode", "arch=compute_80,code=sm_90"])] {
        assert_eq!(inspect(&c).unwrap().kind, CodeKind::Cubin);
    }
}

/// Cut at a section boundary, with e_shnum and e_phnum 0: no section or program table at all.
#[test]
fn no_section_table() {
    let b = sm90();
    let (_, h) = section(&b, ".text.mb");
    let (off, size) = body(&b, h);
    for keep_shoff in [false, true] {
        let mut m = b[..off + size].to_vec();
        put_u16(&mut m, 60, 0);
        put_u16(&mut m, 56, 0);
        put_u64(&mut m, 32, 0);
        if !keep_shoff {
            put_u64(&mut m, 40, 0);
            refused(&m, "no section header table");
        } else {
            // e_shoff still points where the table was, past the cut.
            assert!(inspect(&m).is_err());
        }
    }
}

/// The strings of the tool note: an offset past them, or a string without its NUL.
#[test]
fn tkinfo_description_altered() {
    let b = sm90();
    let (_, h) = section(&b, ".note.nv.tkinfo");
    let (off, _) = body(&b, h);
    let name_len = u32_at(&b, off) as usize;
    let desc = off + 12 + name_len.next_multiple_of(4);
    let desc_len = u32_at(&b, off + 4) as usize;
    for k in 1..6 {
        let mut m = b.clone();
        put_u32(&mut m, desc + 4 * k, (desc_len - 24 + 3) as u32);
        refused(&m, "tool note");
        let mut m = b.clone();
        put_u32(&mut m, desc + 4 * k, 0xffff_fff0);
        refused(&m, "tool note");
    }
    // The tool arguments (the last string) run to the note's end without a NUL.
    let mut m = b.clone();
    let args = desc + 24 + u32_at(&b, desc + 20) as usize;
    for byte in &mut m[args..desc + desc_len] {
        *byte = b' ';
    }
    refused(&m, "tool note");
}

/// A relocation of type 0xffffffff, and one into the NOBITS `.nv.global`.
#[test]
fn relocations_of_no_type_or_into_no_bytes() {
    let b = sm90();
    let rela = sections(&b).into_iter().find(|s| s.3 == 4 && body(&b, s.1).1 >= 24).expect("a RELA section");
    let (off, _) = body(&b, rela.1);
    for t in [0xffff_ffffu32, 0x100, 0x7fff_0000] {
        let mut m = b.clone();
        put_u32(&mut m, off + 8, t);
        refused(&m, "is no relocation type");
    }
    let (global, _) = section(&b, ".nv.global");
    let mut m = b.clone();
    put_u32(&mut m, rela.1 + 44, global as u32);
    refused(&m, "no bytes in the file to patch");
}

/// Each relocation writes within its target: as wide as its type (8 bytes for the 64-bit ones,
/// 16 for those that reach past an instruction's first 8 bytes), and in code its whole 16-byte
/// instruction. Moved to the last bytes its old width allowed, each is refused; R_CUDA_64 at
/// the last 8 bytes of a data section (as nvcc places some) passes.
#[test]
fn relocations_as_wide_as_their_type() {
    let b = sm90();
    let secs = sections(&b);
    let mut cases = 0;
    for (_, rh, _, ty) in secs.iter().filter(|s| s.3 == 4 || s.3 == 9) {
        let esz = if *ty == 4 { 24 } else { 16 };
        let (off, size) = body(&b, *rh);
        let target = u32_at(&b, rh + 44) as usize;
        let th = secs[target].1;
        let tsize = body(&b, th).1 as u64;
        let code = u64_at(&b, th + 8) & 0x4 != 0;
        for k in 0..size / esz {
            let r = off + k * esz;
            // In code: any type, 4 bytes before the end (a field of an instruction that is not
            // all there). In data: the 64-bit and 128-bit types, 4 (8) bytes before the end.
            let tries: &[(u32, u64)] = if code { &[(0x38, 4), (2, 8)] } else { &[(4, 4), (35, 4), (67, 8), (75, 12)] };
            for &(t, room) in tries {
                if tsize < room {
                    continue;
                }
                let mut m = b.clone();
                put_u64(&mut m, r, tsize - room);
                put_u32(&mut m, r + 8, t);
                refused(&m, "are not all inside its section");
                cases += 1;
            }
            if !code && tsize >= 8 {
                let mut m = b.clone();
                put_u64(&mut m, r, tsize - 8);
                put_u32(&mut m, r + 8, 2);
                assert!(inspect(&m).is_ok(), "R_CUDA_64 in the last 8 bytes: {:?}", inspect(&m).err());
            }
        }
    }
    assert!(cases >= 4, "{cases} cases: the kernel has relocations into code and into data");
}

/// A callgraph entry whose caller is no symbol.
#[test]
fn callgraph_caller_past_the_symbol_table() {
    let b = sm90();
    let (_, h) = section(&b, ".nv.callgraph");
    let (off, size) = body(&b, h);
    let (_, symtab) = section(&b, ".symtab");
    let nsyms = (body(&b, symtab).1 / 24) as u32;
    for k in 0..size / 8 {
        for v in [nsyms, nsyms + 1000, 0xffff_fffb] {
            let mut m = b.clone();
            put_u32(&mut m, off + 8 * k, v);
            refused(&m, "caller is symbol");
        }
    }
}

/// Instruction offsets past the kernel's code (or not 8-aligned), in every attribute that lists
/// them: those this kernel has (EXIT, INT_WARP_WIDE, SYSCALL, MBARRIER), and the others written
/// over a record of the right shape; EXTERNS naming no symbol.
#[test]
fn instruction_offsets_past_the_code() {
    let b = sm90();
    let (_, h) = section(&b, ".nv.info.mb");
    let (_, text) = section(&b, ".text.mb");
    let code = body(&b, text).1 as u32;
    let recs = records(&b, h);
    let find =
        |attr: u8| recs.iter().copied().find(|r| r.1 == attr).unwrap_or_else(|| panic!("no attribute {attr:#x}"));
    // (attribute, record it is written over, words per entry)
    let cases: &[(u8, u8, usize)] = &[
        (0x1c, 0x1c, 1),
        (0x31, 0x31, 1),
        (0x46, 0x46, 1),
        (0x39, 0x39, 4),
        (0x25, 0x31, 1),
        (0x27, 0x31, 1),
        (0x2e, 0x1c, 2),
        (0x44, 0x1c, 2),
        (0x40, 0x31, 3),
    ];
    for &(attr, over, stride) in cases {
        let (p, _, _, len) = find(over);
        assert_eq!(len % (4 * stride), 0, "{attr:#x} over {over:#x}");
        // Relabelled with its offsets intact, the record passes.
        let mut good = b.clone();
        good[p + 1] = attr;
        assert!(inspect(&good).is_ok(), "{attr:#x} over {over:#x}: {:?}", inspect(&good).err());
        for k in (0..len / 4).step_by(stride) {
            for v in [code, code - 4, code + 0x1000, 0xffff_fff8, 4] {
                let mut m = good.clone();
                put_u32(&mut m, p + 4 + 4 * k, v);
                refused(&m, "not an instruction of its");
            }
        }
    }
    let (_, symtab) = section(&b, ".symtab");
    let nsyms = (body(&b, symtab).1 / 24) as u32;
    let (p, _, _, _) = find(0x0f);
    for v in [nsyms, 0xffff_ffff] {
        let mut m = b.clone();
        put_u32(&mut m, p + 4, v);
        refused(&m, "names symbol");
    }
}

/// An sm_80 cubin labelled sm_90 in e_flags (and so in its entry header when wrapped, which
/// `refused` also checks): its kernel parameters sit where sm_80 code has them. compute_80 code
/// compiled for sm_90 is sm_90 code and passes.
#[test]
fn sm80_code_labelled_sm90() {
    let sm80 = build(&["-arch=sm_80"]);
    assert_eq!(cubin_sm(&sm80), 80);
    let mut m = sm80.clone();
    let flags = u32_at(&m, 48);
    put_u32(&mut m, 48, (flags & !0xff00) | (90 << 8));
    refused(&m, "where sm_90 code has them at 0x210");
    // And sm_90 code labelled sm_80, sm_100 or sm_120.
    for sm in [80u32, 100, 120] {
        let mut m = sm90();
        let flags = u32_at(&m, 48);
        put_u32(&mut m, 48, (flags & !0xff00) | (sm << 8));
        refused(&m, "code has them at");
    }
    let ptx80 = build(&["-gencode", "arch=compute_80,code=sm_90"]);
    assert_eq!(cubin_sm(&ptx80), 90);
    assert!(inspect(&ptx80).is_ok());
}

/// The parameter bank a PARAM_CBANK attribute names holds the parameters.
#[test]
fn parameters_inside_their_bank() {
    let b = sm90();
    let (_, h) = section(&b, ".nv.info.mb");
    let (p, _, _, _) = records(&b, h).into_iter().find(|r| r.1 == 0x0a).unwrap();
    let mut m = b.clone();
    put_u16(&mut m, p + 10, 0x4000); // the parameters' size
    refused(&m, "run past their constant bank");
    // The bank's symbol moved to a section without file bytes: it names no bank (the size
    // check was skipped for it).
    let sym = u32_at(&b, p + 4) as usize;
    let (_, symtab) = section(&b, ".symtab");
    let at = body(&b, symtab).0 + 24 * sym + 6;
    let (shared, _) = sections(&b).into_iter().map(|s| (s.0, s.3)).find(|s| s.1 == 8).expect("a NOBITS section");
    let mut m = b.clone();
    put_u16(&mut m, at, shared as u16);
    refused(&m, "is no section with contents");
    // Made absolute, common or of an extended index: refused for any symbol (a reserved index,
    // which no toolkit writes; see symbols_in_reserved_sections).
    for x in [0xfff1u16, 0xfff2, 0xffff] {
        let mut m = b.clone();
        put_u16(&mut m, at, x);
        refused(&m, &format!("section index {x:#x} is a reserved one"));
    }
}

/// Instruction offsets of a kernel's `.nv.info` described against a section without file bytes
/// (its sh_info moved to the NOBITS `.nv.global`, grown large): no offset lies in it.
#[test]
fn instruction_offsets_in_no_code() {
    let b = sm90();
    let (_, h) = section(&b, ".nv.info.mb");
    let (global, gh) = section(&b, ".nv.global");
    let mut m = b.clone();
    put_u32(&mut m, h + 44, global as u32);
    put_u64(&mut m, gh + 32, 16 << 20);
    refused(&m, "not an instruction of its");
}

// ---- Layouts of real toolkits' output that CUDA loads, each accepted (issue 21, item 3) ----

/// A kernel whose parameters (5,208 bytes) are past the classic 4 KiB: nvcc 13 puts them at
/// 0x1a80 of the constant bank in sm_75 and sm_80 code, at the generation's base in sm_90 code
/// (cuTENSOR 2.8 ships such sm_75 and sm_80 code). All pass; an sm_90-labelled copy of the
/// sm_80 code is still refused, and so is an sm_90 kernel's parameters moved off its base.
#[test]
fn large_parameters_after_the_base() {
    const BIG: &str = "struct Big { int v[1302]; };\n\
                       extern \"C\" __global__ void big(Big b, int *out) { out[threadIdx.x] = b.v[threadIdx.x]; }\n";
    let dir = TempDir::new("structure-large-params");
    for arch in ["-arch=sm_80", "-arch=sm_90", "-arch=sm_75"] {
        let c = nvcc(&dir.join("big.cu"), BIG, &dir.join("big.cubin"), &["-cubin", arch]);
        let info = inspect(&c).unwrap_or_else(|e| panic!("{arch}: nvcc's own large-parameter kernel refused: {e}"));
        assert_eq!(info.kind, CodeKind::Cubin);
        if arch == "-arch=sm_80" {
            let (_, h) = section(&c, ".nv.info.big");
            let (p, _, _, _) = records(&c, h).into_iter().find(|r| r.1 == 0x0a).unwrap();
            assert_eq!(u16_at(&c, p + 8), 0x1a80, "where nvcc puts large sm_80 parameters");
            let mut m = c.clone();
            let flags = u32_at(&m, 48);
            put_u32(&mut m, 48, (flags & !0xff00) | (90 << 8));
            // Large sm_90 parameters stay at the base: sm_80 code labelled sm_90 is refused.
            refused(&m, "where sm_90 code has them at 0x210");
        }
    }
    let b = sm90();
    let (_, h) = section(&b, ".nv.info.mb");
    let (p, _, _, _) = records(&b, h).into_iter().find(|r| r.1 == 0x0a).unwrap();
    let mut m = b.clone();
    put_u16(&mut m, p + 8, 0x380);
    refused(&m, "where sm_90 code has them at 0x210");
}

/// `.nv.global` as type 0x70000007 (cuDensityMat 0.7): global memory with no bytes in the file,
/// so its placement may run past the image, as NOBITS; a relocation into it is still refused.
#[test]
fn global_memory_section_without_file_bytes() {
    let b = sm90();
    let (global, h) = section(&b, ".nv.global");
    let mut m = b.clone();
    put_u32(&mut m, h + 4, 0x7000_0007);
    put_u64(&mut m, h + 24, b.len() as u64 - 8);
    put_u64(&mut m, h + 32, 0x20000);
    assert!(inspect(&m).is_ok(), "{:?}", inspect(&m).err());
    // The same placement as PROGBITS claims file bytes the image does not have.
    let mut p = m.clone();
    put_u32(&mut p, h + 4, 1);
    assert!(inspect(&p).is_err(), "a PROGBITS section past the image accepted");
    let rela = sections(&m).into_iter().find(|s| s.3 == 4 && body(&m, s.1).1 >= 24).expect("a RELA section");
    put_u32(&mut m, rela.1 + 44, global as u32);
    refused(&m, "no bytes in the file to patch");
}

/// A shared-memory symbol in a NOBITS `.nv.shared.*` / `.nv_debug.shared` section may reach
/// past the section's size (NCCL 2.21 for CUDA 11: after the 16 bytes the driver reserves); in
/// any other NOBITS section (`.nv.global`) it may not.
#[test]
fn shared_symbols_by_section_name() {
    let b = sm90();
    let secs = sections(&b);
    let (shared, sh) = {
        let s = secs.iter().find(|s| s.2.starts_with(".nv.shared.")).expect("a .nv.shared section");
        (s.0, s.1)
    };
    let (global, _) = section(&b, ".nv.global");
    let (_, symh) = section(&b, ".symtab");
    let (symoff, symsize) = body(&b, symh);
    let sym_in = |m: &[u8], sec: usize| {
        (0..symsize / 24).map(|k| symoff + 24 * k).find(|&s| u16_at(m, s + 6) as usize == sec).expect("a symbol there")
    };
    let size = u64_at(&b, sh + 32);
    let mut m = b.clone();
    put_u32(&mut m, sh + 4, 8); // NOBITS, as older toolkits write shared memory
    let s = sym_in(&m, shared);
    put_u64(&mut m, s + 8, 0x10);
    put_u64(&mut m, s + 16, size.max(16));
    assert!(inspect(&m).is_ok(), "{:?}", inspect(&m).err());
    let mut g = b.clone();
    let s = sym_in(&g, global);
    put_u64(&mut g, s + 16, u64_at(&b, section(&b, ".nv.global").1 + 32) + 16);
    refused(&g, "lies outside its section");
}

/// A symbol given a reserved section index (0xff00 and above: SHN_ABS, SHN_COMMON, SHN_XINDEX,
/// ...), which no NVIDIA cubin has: CUDA's loader takes it for a section and crashed on the
/// H200 for `vprintf` (a function the driver provides) and for the kernel, whatever the
/// reserved value. Each kind of symbol, each value: refused.
#[test]
fn symbols_in_reserved_sections() {
    let b = sm90();
    let (symtab, symh) = section(&b, ".symtab");
    let (symoff, symsize) = body(&b, symh);
    let strtab = body(&b, sections(&b)[u32_at(&b, symh + 40) as usize].1).0;
    let named = |name: &str| {
        (0..symsize / 24)
            .map(|k| symoff + 24 * k)
            .find(|&s| {
                let at = strtab + u32_at(&b, s) as usize;
                b[at..].split(|&c| c == 0).next() == Some(name.as_bytes())
            })
            .unwrap_or_else(|| panic!("no symbol {name} in section {symtab}"))
    };
    for name in ["vprintf", "mb", "g"] {
        let s = named(name);
        for shndx in [0xff00u16, 0xff1f, 0xff20, 0xff3f, 0xfff1, 0xfff2, 0xfffe, 0xffff] {
            let mut m = b.clone();
            put_u16(&mut m, s + 6, shndx);
            refused(&m, "section index");
        }
    }
}

/// No program header table (e_phnum 0, as in relocatable cubins) but an e_phoff past the
/// image: CUDA's loader reads there all the same, and crashed on the H200 for 2^32, 2^62 and
/// 2^63. 0 (what toolkits write) and an offset with room for an entry inside the image pass.
#[test]
fn program_header_offset_without_a_table() {
    for b in [build(&["-arch=sm_90", "-rdc=true"]), sm90()] {
        let mut z = b.clone();
        put_u16(&mut z, 56, 0);
        for phoff in [0, 64] {
            put_u64(&mut z, 32, phoff);
            assert!(inspect(&z).is_ok(), "e_phoff {phoff:#x}: {:?}", inspect(&z).err());
        }
        for phoff in [b.len() as u64, 1 << 32, 1 << 62, 1 << 63, u64::MAX] {
            let mut m = z.clone();
            put_u64(&mut m, 32, phoff);
            refused(&m, "e_phoff");
        }
    }
}
