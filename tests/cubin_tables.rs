//! The cross-table checks of a cubin's sections (src/image/cubin/sections.rs) on nvcc's own
//! output: the real cubin passes, and each class of in-bounds corruption that crashed CUDA's
//! loader on the H200 (a non-empty null section, links naming no section, symbols past their
//! section, a renamed kernel symbol, .nv.info records out of shape, relocations outside their
//! target, segments no cubin has) is refused with its reason. CPU only; needs the project's
//! nvcc (scripts/bootstrap.sh).

mod common;

use std::sync::OnceLock;

use common::{nvcc, TempDir};
use cudyn::image::{inspect, CodeKind};

const SOURCE: &str = "extern \"C\" __global__ void k(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2.0f; }\n__device__ int g;\nextern \"C\" __global__ void k2(int *y) { y[0] = g; }\n";

/// A real cubin from the project's nvcc, of two kernels and a global (built once per process).
fn cubin() -> Vec<u8> {
    static C: OnceLock<Vec<u8>> = OnceLock::new();
    C.get_or_init(|| {
        let dir = TempDir::new("cubin-tables");
        nvcc(&dir.join("k.cu"), SOURCE, &dir.join("k.cubin"), &["-cubin", "-arch=sm_90"])
    })
    .clone()
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}
fn shdr(b: &[u8], i: usize) -> usize {
    u64_at(b, 40) as usize + 64 * i
}
fn shnum(b: &[u8]) -> usize {
    u16::from_le_bytes([b[60], b[61]]) as usize
}
fn sec_type(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[shdr(b, i) + 4..shdr(b, i) + 8].try_into().unwrap())
}
/// The name of section `i` of `b`.
fn section_name(b: &[u8], i: usize) -> String {
    let names = u64_at(b, shdr(b, u16::from_le_bytes([b[62], b[63]]) as usize) + 24) as usize;
    let at = names + u32::from_le_bytes(b[shdr(b, i)..shdr(b, i) + 4].try_into().unwrap()) as usize;
    let end = at + b[at..].iter().position(|&c| c == 0).unwrap();
    String::from_utf8_lossy(&b[at..end]).into_owned()
}
fn refused(b: &[u8], why: &str) {
    match inspect(b) {
        Err(e) => assert!(e.to_string().contains(why), "refused, but for {e} (expected '{why}')"),
        Ok(i) => panic!("accepted a corrupted cubin ({:?}); expected '{why}'", i.kind),
    }
}

/// The word-at-a-time comparison against its plain definition: the C string at the start of
/// `sym` is `name` up to its first NUL (or its end).

#[test]
fn the_real_cubin_passes() {
    assert_eq!(inspect(&cubin()).unwrap().kind, CodeKind::Cubin);
}

// Each case below is a corruption that crashed CUDA's loader on the H200 (mutants.cpp).
#[test]
fn null_section_must_be_empty() {
    let mut b = cubin();
    let s0 = shdr(&b, 0);
    b[s0 + 24] = 1; // sh_offset
    refused(&b, "null section");
    let mut b = cubin();
    b[s0] = 7; // sh_name
    refused(&b, "null section");
}

#[test]
fn info_links_must_name_a_section() {
    let mut b = cubin();
    let i = (1..shnum(&b)).find(|&i| u64_at(&b, shdr(&b, i) + 8) & 0x40 != 0).expect("a section with SHF_INFO_LINK");
    let at = shdr(&b, i) + 44;
    b[at..at + 4].copy_from_slice(&0x2016u32.to_le_bytes());
    refused(&b, "does not exist");
}

#[test]
fn section_names_stay_in_the_name_table() {
    let mut b = cubin();
    let at = shdr(&b, 3);
    b[at..at + 4].copy_from_slice(&0x10000u32.to_le_bytes());
    refused(&b, "outside the name table");
}

#[test]
fn symbol_tables_are_whole_and_consistent() {
    let sym = (1..shnum(&cubin())).find(|&i| sec_type(&cubin(), i) == 2).unwrap();
    let mut b = cubin();
    let at = shdr(&b, sym) + 32; // sh_size
    let size = u64_at(&b, at);
    b[at..at + 8].copy_from_slice(&(size - 5).to_le_bytes());
    refused(&b, "24-byte symbols");
    // A symbol's section index that does not exist.
    let mut b = cubin();
    let off = u64_at(&b, shdr(&b, sym) + 24) as usize + 24 * 2;
    b[off + 6..off + 8].copy_from_slice(&0x9000u16.to_le_bytes());
    refused(&b, "does not exist");
}

/// Link and info words name what they must: a section, a symbol of the linked table.
#[test]
fn link_and_info_words_name_what_they_must() {
    let b = cubin();
    let n = shnum(&b);
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let set = |at: usize, v: u32| {
        let mut m = b.clone();
        m[at..at + 4].copy_from_slice(&v.to_le_bytes());
        m
    };
    // Any section's link past the last section.
    refused(&set(shdr(&b, 1) + 40, n as u32), "links to section");
    refused(&set(shdr(&b, n - 1) + 40, 0xffff_ffff), "links to section");
    // A kernel's .text section names its symbol in its info's low 24 bits.
    let text = (1..n)
        .find(|&i| sec_type(&b, i) == 1 && word(&b, shdr(&b, i) + 40) != 0 && u64_at(&b, shdr(&b, i) + 8) & 0x40 == 0)
        .expect("a .text section linked to the symbol table");
    let info = word(&b, shdr(&b, text) + 44);
    assert!(inspect(&set(shdr(&b, text) + 44, info ^ 0x0500_0000)).is_ok(), "the register count is free");
    refused(&set(shdr(&b, text) + 44, info | 0x00ff_0000), "names symbol");
    // Whatever its sh_link names: CUDA 12.0/12.1-era compilers link code to `.nv.info` (3,273
    // sm_90 cubins of NVIDIA's wheels), and the symbol is still the symbol table's.
    let nv_info = (1..n).find(|&i| sec_type(&b, i) == 0x7000_0000).expect(".nv.info") as u32;
    for link in [nv_info, 0] {
        let relinked = |info: u32| {
            let mut m = set(shdr(&b, text) + 40, link);
            m[shdr(&b, text) + 44..][..4].copy_from_slice(&info.to_le_bytes());
            m
        };
        inspect(&relinked(info)).unwrap_or_else(|e| panic!("code linked to section {link}: {e}"));
        refused(&relinked(info | 0x00ff_0000), "names symbol");
        refused(&relinked(info & 0xff00_0000 | 0xffff), "names symbol");
    }
    // And whatever its flags say: with SHF_INFO_LINK its sh_info passed as a section index, and
    // nvcc's cubin has more sections than symbols.
    let nsyms = u64_at(&b, shdr(&b, (1..n).find(|&i| sec_type(&b, i) == 2).unwrap()) + 32) as u32 / 24;
    assert!(nsyms < n as u32, "{nsyms} symbols, {n} sections");
    let mut m = set(shdr(&b, text) + 44, info & 0xff00_0000 | (n as u32 - 1));
    m[shdr(&b, text) + 8] |= 0x40;
    refused(&m, "names symbol");
    m[shdr(&b, text) + 44..][..4].copy_from_slice(&info.to_le_bytes());
    inspect(&m).unwrap_or_else(|e| panic!("code flagged SHF_INFO_LINK naming its symbol: {e}"));
    // A symbol table's info (one past its last local symbol) within its symbols.
    let sym = (1..n).find(|&i| sec_type(&b, i) == 2).unwrap();
    refused(&set(shdr(&b, sym) + 44, 10_000), "past its");
    // .nv.info's symbols are the cubin's symbol table's whatever its link names (CUDA 12.1-era
    // cubins of cuBLAS and CUPTI link it to another section), so they are still checked.
    let info_sec = (1..n).find(|&i| sec_type(&b, i) == 0x7000_0000).expect(".nv.info");
    assert!(inspect(&set(shdr(&b, info_sec) + 40, 1)).is_ok(), ".nv.info linked to the name table");
    assert!(inspect(&set(shdr(&b, info_sec) + 40, n as u32 + 7)).is_ok(), ".nv.info linked past the sections");
    // Only code keeps a register count in sh_info's high 8 bits. A kernel's constant bank linked
    // to the symbol table without an info link, as TensorRT's hand-assembled cubins have it,
    // names a symbol with all 32 bits: on the H100 CUDA's loader crashed when the campaign set
    // the bank's 4 to 0x80000004, 0x01000000 or any of its high 8 bits (nineteenth session).
    let bank = (1..n).find(|&i| section_name(&b, i) == ".nv.constant0.k").expect(".nv.constant0.k");
    let symtab = (1..n).find(|&i| sec_type(&b, i) == 2).unwrap() as u32;
    let tensorrt_style = |info: u32| {
        let mut m = set(shdr(&b, bank) + 8, 0x2); // ALLOC, no SHF_INFO_LINK
        m[shdr(&b, bank) + 40..][..4].copy_from_slice(&symtab.to_le_bytes());
        m[shdr(&b, bank) + 44..][..4].copy_from_slice(&info.to_le_bytes());
        m
    };
    inspect(&tensorrt_style(4)).unwrap_or_else(|e| panic!("a bank naming symbol 4: {e}"));
    for info in [0x8000_0004, 0x0100_0000, 0x8000_0000, 0x0400_0004] {
        refused(&tensorrt_style(info), "names symbol");
    }
}

/// Known .nv.info attributes keep their format and length; instruction offsets point at
/// instructions of the kernel.
#[test]
fn nv_info_records_keep_their_shape() {
    let b = cubin();
    let n = shnum(&b);
    // The first record of the given attribute in a kernel's .nv.info: (section, record offset).
    let find = |attr: u8| {
        (1..n).filter(|&i| sec_type(&b, i) == 0x7000_0000).find_map(|i| {
            let (off, size) = (u64_at(&b, shdr(&b, i) + 24) as usize, u64_at(&b, shdr(&b, i) + 32) as usize);
            let mut p = off;
            while p + 4 <= off + size {
                let (f, a, len) = (b[p], b[p + 1], u16::from_le_bytes([b[p + 2], b[p + 3]]) as usize);
                if a == attr {
                    return Some((i, p));
                }
                p += 4 + if f == 4 { len } else { 0 };
            }
            None
        })
    };
    let (_, p) = find(0x2f).expect("a REGCOUNT record");
    let mut m = b.clone();
    m[p] = 3; // format 3 (a value in the header) instead of 4
    assert!(inspect(&m).is_err());
    let (i, p) = find(0x1c).expect("an EXIT_INSTR_OFFSETS record");
    let text = u32::from_le_bytes(b[shdr(&b, i) + 44..shdr(&b, i) + 48].try_into().unwrap()) as usize;
    let size = u64_at(&b, shdr(&b, text) + 32) as u32;
    for (v, why) in
        [(size, "not an instruction"), (size - 8 + 4, "not an instruction"), (u32::MAX, "not an instruction")]
    {
        let mut m = b.clone();
        m[p + 4..p + 8].copy_from_slice(&v.to_le_bytes());
        refused(&m, why);
    }
    let mut m = b.clone();
    m[p + 4..p + 8].copy_from_slice(&(size - 8).to_le_bytes());
    assert!(inspect(&m).is_ok(), "the last instruction is an instruction");
}

/// Segments are what cubins have: PT_LOAD or PT_PHDR, at address 0, memory >= file size but
/// for the padding to the alignment.
#[test]
fn segments_are_what_cubins_have() {
    let b = cubin();
    let phoff = u64_at(&b, 32) as usize;
    assert!(u16::from_le_bytes([b[56], b[57]]) > 0, "nvcc's cubin has segments");
    for (at, v, ok) in [(0usize, 3u64, false), (4, 8, false), (16, 0x1000, false), (40, 0, false), (4, 7, true)] {
        let mut m = b.clone();
        let width = if at < 8 { 4 } else { 8 };
        m[phoff + at..phoff + at + width].copy_from_slice(&v.to_le_bytes()[..width]);
        if at == 40 && u64_at(&b, phoff + 32) == 0 {
            continue; // no file bytes: any memory size is at least as large
        }
        assert_eq!(inspect(&m).is_ok(), ok, "segment word {at} = {v:#x}: {:?}", inspect(&m).err());
    }
    // nvcc up to CUDA 10.2 padded a segment's file bytes by 1 to 8 past its memory size (0x63
    // and 0x68, 0x8 and 0x10, alignment 8): a memory size short of the file size by up to the
    // alignment passes, one byte less does not.
    let phnum = u16::from_le_bytes([b[56], b[57]]) as usize;
    let p = (0..phnum)
        .map(|i| phoff + 56 * i)
        .find(|&p| u64_at(&b, p + 32) > u64_at(&b, p + 48) && u64_at(&b, p + 48) > 1)
        .expect("a segment longer than its alignment");
    let (filesz, align) = (u64_at(&b, p + 32), u64_at(&b, p + 48));
    let shortest = filesz - align;
    for (memsz, ok) in [(shortest, true), (shortest - 1, false)] {
        let mut m = b.clone();
        m[p + 40..p + 48].copy_from_slice(&memsz.to_le_bytes());
        assert_eq!(
            inspect(&m).is_ok(),
            ok,
            "file size {filesz:#x}, alignment {align}, memory size {memsz:#x}: {:?}",
            inspect(&m).err()
        );
    }
}

/// A relocation must patch bytes inside its target: R_CUDA_64 needs 8 of them.
#[test]
fn relocations_lie_inside_their_target() {
    let b = cubin();
    let rel = (1..shnum(&b)).find(|&i| matches!(sec_type(&b, i), 4 | 9)).expect("a relocation section");
    let target = u32::from_le_bytes(b[shdr(&b, rel) + 44..shdr(&b, rel) + 48].try_into().unwrap()) as usize;
    let target_size = u64_at(&b, shdr(&b, target) + 32);
    let at = u64_at(&b, shdr(&b, rel) + 24) as usize;
    let r_type = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap());
    assert_eq!(r_type, 2, "nvcc's relocation is R_CUDA_64");
    let with_offset = |offset: u64| {
        let mut m = b.clone();
        m[at..at + 8].copy_from_slice(&offset.to_le_bytes());
        m
    };
    assert!(inspect(&with_offset(target_size - 8)).is_ok());
    refused(&with_offset(target_size - 7), "not all inside its section");
    refused(&with_offset(u64::MAX - 3), "not all inside its section");
}

#[test]
fn text_sections_need_their_kernel_symbol() {
    let mut b = cubin();
    let sym = (1..shnum(&b)).find(|&i| sec_type(&b, i) == 2).unwrap();
    let strtab = u32::from_le_bytes(b[shdr(&b, sym) + 40..shdr(&b, sym) + 44].try_into().unwrap()) as usize;
    let (off, size) = (u64_at(&b, shdr(&b, strtab) + 24) as usize, u64_at(&b, shdr(&b, strtab) + 32) as usize);
    // Rename the kernel "k2" in the symbol names: its .text.k2 section loses its symbol.
    let pos = b[off..off + size].windows(4).position(|w| w == b"\0k2\0").expect("k2 in the string table") + off;
    b[pos + 2] = b'9';
    refused(&b, "has no symbol of that name");
}

/// Relocatable device code (`nvcc -dc`): initialised data that holds the address of a function
/// the object does not define is code never linked with its other parts (CUDA's loader died on
/// NCCL's such function table on the H200); refused with the symbol named. The same object with
/// the function defined, code that calls an undefined function (CUDA refuses it with an error
/// itself), and `printf` (the driver supplies `vprintf`) pass.
#[test]
fn unlinked_data_references_are_refused() {
    let dir = TempDir::new("cubin-unlinked");
    let build = |name: &str, src: &str| {
        nvcc(
            &dir.join(&format!("{name}.cu")),
            src,
            &dir.join(&format!("{name}.cubin")),
            &["-cubin", "-dc", "-arch=sm_90"],
        )
    };
    let table = "__device__ void other_part();\n\
                 typedef void (*fp)();\n\
                 __device__ fp table[] = { other_part };\n\
                 extern \"C\" __global__ void k(int i) { table[i](); }\n";
    let unlinked = build("table", table);
    assert_eq!(u16::from_le_bytes([unlinked[16], unlinked[17]]), 1, "nvcc -dc made no relocatable object");
    let e = inspect(&unlinked).expect_err("an unlinked function table was accepted");
    assert!(
        e.to_string().contains("_Z10other_partv")
            && e.to_string().contains("nvJitLink")
            && e.to_string().contains(".nv.global.init"),
        "{}",
        e.to_string()
    );

    let defined = build("defined", &format!("{table}__device__ void other_part() {{}}\n"));
    inspect(&defined).unwrap_or_else(|e| panic!("a table of a function it defines: {e}"));
    let called = "__device__ void other_part();\nextern \"C\" __global__ void k() { other_part(); }\n";
    inspect(&build("called", called)).unwrap_or_else(|e| panic!("a call of an undefined function: {e}"));
    let printf = "#include <cstdio>\n\
                  extern \"C\" __global__ void k(int i) { printf(\"%d\\n\", i); }\n";
    inspect(&build("printf", printf)).unwrap_or_else(|e| panic!("printf in an object: {e}"));
}

/// The parameter layouts cudyn reads for the loader (`contents::param_layouts`, what a
/// kernel of an image cudyn built answers without asking CUDA) are the C ABI's, on nvcc's own
/// cubin and on the fatbin cudyn builds for two GPUs from nvcc's fatbin; a kernel
/// with no parameters has an empty layout.
#[test]
fn the_loaders_layouts_are_the_c_abis() {
    use cudyn::image::contents::{param_layouts, Param};
    const SRC: &str = "struct S { char a; long long b; };\n\
        extern \"C\" __global__ void mixed(char c, double *p, int n, float4 v, S s) { if (n) p[0] = c + v.x + s.b; }\n\
        extern \"C\" __global__ void none() {}\n";
    let dir = TempDir::new("cubin-layouts");
    let src = dir.join("k.cu");
    let cubin = nvcc(&src, SRC, &dir.join("k.cubin"), &["-cubin", "-arch=sm_90"]);
    let fatbin = nvcc(
        &src,
        SRC,
        &dir.join("k.fatbin"),
        &["-fatbin", "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90"],
    );
    let built = cudyn::library::validate_as_if(&fatbin, &[80, 90]).expect("cudyn builds the image for two GPUs");
    let p = |offset, size| Param { offset, size };
    for (what, image) in [("cubin", &cubin), ("built fatbin", &built)] {
        let got = param_layouts(image).unwrap_or_else(|| panic!("{what}: no layouts"));
        let names: Vec<&[u8]> = got.iter().map(|(n, _)| &n[..]).collect();
        assert_eq!(names, [&b"mixed"[..], b"none"], "{what}");
        assert_eq!(&got[0].1[..], [p(0, 1), p(8, 8), p(16, 4), p(32, 16), p(48, 16)], "{what}");
        assert!(got[1].1.is_empty(), "{what}");
    }
}

/// The shortest of three runs of `f`.
fn fastest(f: &dyn Fn()) -> std::time::Duration {
    (0..3)
        .map(|_| {
            let t = std::time::Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// What `cudyn inspect` and a link's result check read of an image (`contents`) costs time in
/// proportion to the image, as its validation does: each kernel's registers, stack, shared and
/// constant sizes were looked up by scanning every record and section again, so 5,000 kernels
/// took 0.9 s against 5 ms to validate them (a 16 MB cubin of 10,000 would take four times
/// that). The bound is a ratio to the validation of the same bytes in the same process, so a
/// slow machine moves both sides; the scan made it about 170.
#[test]
fn contents_of_many_kernels_costs_what_their_validation_costs() {
    const N: usize = 4000;
    let mut source = format!("__device__ float g[{N}];\n");
    for i in 0..N {
        source += &format!("extern \"C\" __global__ void k{i}(float *a, int b) {{ a[b] += {i}.0f; g[{i}] = a[0]; }}\n");
    }
    let dir = TempDir::new("many-kernels");
    let big = nvcc(&dir.join("many.cu"), &source, &dir.join("many.cubin"), &["-cubin", "-arch=sm_90"]);
    let validate = fastest(&|| assert_eq!(inspect(&big).unwrap().kind, CodeKind::Cubin));
    let read = fastest(&|| {
        let c = cudyn::image::contents::contents(&big);
        assert!(c.verdict.is_ok());
        assert_eq!(c.kernels.len(), N);
        assert!(c.kernels.iter().all(|k| k.resources.registers.is_some() && k.resources.constant_bytes.is_some()));
    });
    let ratio = read.as_secs_f64() / validate.as_secs_f64();
    assert!(ratio < 30.0, "contents took {read:?}, {ratio:.0} times the validation's {validate:?}");
}

/// Section names that share their bytes: every kernel's `.nv.info.<kernel>` table of a real
/// cubin renamed to one 1 MiB string. Such an image passes validation (CUDA finds these tables
/// by their links), and reading each name whole made `contents` cost the name's size per
/// table: 200 copies of the name (200 MiB) and the time to find its end 200 times. Names taken
/// whole are now charged to the table's size: `contents` holds at most twice the table in
/// names, and the layouts a launch would read from the image are not read (CUDA is asked).
#[test]
fn names_that_share_their_bytes_cost_no_more_than_the_table() {
    const N: usize = 200;
    const LONG: usize = 1 << 20;
    let mut source = String::new();
    for i in 0..N {
        source += &format!("extern \"C\" __global__ void k{i}(float *a, int b) {{ a[b] += {i}.0f; }}\n");
    }
    let dir = TempDir::new("shared-names");
    let mut b = nvcc(&dir.join("shared.cu"), &source, &dir.join("shared.cubin"), &["-cubin", "-arch=sm_90"]);
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let strndx = u16::from_le_bytes([b[62], b[63]]) as usize;
    let (table_at, table_len) =
        (u64_at(&b, shdr(&b, strndx) + 24) as usize, u64_at(&b, shdr(&b, strndx) + 32) as usize);
    let mut table = b[table_at..table_at + table_len].to_vec();
    let long_at = table.len() as u32;
    table.extend_from_slice(b".nv.info.");
    table.extend(std::iter::repeat_n(b'a', LONG));
    table.push(0);
    let renamed = (1..shnum(&b))
        .filter(|&i| {
            let name = &b[table_at + u32_at(&b, shdr(&b, i)) as usize..];
            name.starts_with(b".nv.info.") && sec_type(&b, i) == 0x7000_0000
        })
        .collect::<Vec<_>>();
    assert_eq!(renamed.len(), N, "one .nv.info.<kernel> table per kernel");
    b.resize(b.len().next_multiple_of(8), 0);
    let new_at = b.len() as u64;
    b.extend_from_slice(&table);
    let h = shdr(&b, strndx);
    b[h + 24..h + 32].copy_from_slice(&new_at.to_le_bytes());
    b[h + 32..h + 40].copy_from_slice(&(table.len() as u64).to_le_bytes());
    for i in renamed {
        let h = shdr(&b, i);
        b[h..h + 4].copy_from_slice(&long_at.to_le_bytes());
    }

    assert!(inspect(&b).is_ok(), "the renamed cubin should pass validation: {:?}", inspect(&b).err());
    // Time against a search of the table for a byte it lacks, in this process. A name taken
    // whole costs a few dozen such searches in the debug build (its search, its text, its
    // hashing): the budget allows two names, and reading each table's name took 200.
    let search = fastest(&|| assert!(std::hint::black_box(&table).iter().position(|&c| c == b'\n').is_none()));
    let validate = fastest(&|| assert!(inspect(&b).is_ok()));
    let read = fastest(&|| drop(cudyn::image::contents::contents(&b)));
    let c = cudyn::image::contents::contents(&b);
    let names: usize = c.kernels.iter().map(|k| k.name.len()).sum();
    assert!(names <= 2 * table.len() + (64 << 10), "{} kernels hold {names} bytes of names", c.kernels.len());
    assert!(
        read < validate * 2 + search * 250,
        "contents took {read:?}: validation {validate:?}, one search of the name table {search:?}"
    );
    assert_eq!(cudyn::image::contents::param_layouts(&b), None);
}

/// nvcc's cubin of a kernel that calls `printf`, `malloc` and `free` (functions the driver
/// supplies), built once per process.
fn driver_functions_cubin() -> Vec<u8> {
    static C: OnceLock<Vec<u8>> = OnceLock::new();
    C.get_or_init(|| {
        let dir = TempDir::new("cubin-driver-functions");
        let src = "#include <cstdio>\n\
                   extern \"C\" __global__ void k(int i) { int *p = (int *)malloc(4); printf(\"%d %p\\n\", i, p); free(p); }\n";
        nvcc(&dir.join("k.cu"), src, &dir.join("k.cubin"), &["-cubin", "-arch=sm_90"])
    })
    .clone()
}

/// What the loader resolves when it loads code into a context (found by the structured campaign
/// with every accepted mutant preloaded, H100, driver 580, 2026-12-07): on nvcc's cubin of a
/// kernel that calls `printf` and `malloc`, the functions the driver supplies keep a binding
/// and type it can look up and stay undefined, a callgraph's undefined callee is a function,
/// and nothing relocates a kernel's constant banks (its parameter bank, or a bank sh_info
/// attaches to its code). The unchanged cubin passes.
#[test]
fn what_the_loader_resolves_in_a_context_is_what_it_can() {
    let b = driver_functions_cubin();
    inspect(&b).unwrap_or_else(|e| panic!("nvcc's cubin: {e}"));
    let n = shnum(&b);
    let sec_name = |i: usize| section_name(&b, i);
    let symtab = (1..n).find(|&i| sec_type(&b, i) == 2).expect("a symbol table");
    let (sym_at, sym_count) =
        (u64_at(&b, shdr(&b, symtab) + 24) as usize, u64_at(&b, shdr(&b, symtab) + 32) as usize / 24);
    let strtab =
        u64_at(&b, shdr(&b, u32::from_le_bytes(b[shdr(&b, symtab) + 40..][..4].try_into().unwrap()) as usize) + 24);
    let symbol = |name: &str| {
        (0..sym_count)
            .map(|k| sym_at + 24 * k)
            .find(|&s| {
                let at = strtab as usize + u32::from_le_bytes(b[s..s + 4].try_into().unwrap()) as usize;
                b[at..].starts_with(name.as_bytes()) && b[at + name.len()] == 0
            })
            .unwrap_or_else(|| panic!("no symbol {name}"))
    };
    let vprintf = symbol("vprintf");
    assert_eq!(
        (b[vprintf + 4], &b[vprintf + 6..vprintf + 8]),
        (0x12, &[0u8, 0][..]),
        "vprintf: an undefined global function"
    );
    let with = |at: usize, bytes: &[u8]| {
        let mut m = b.clone();
        m[at..at + bytes.len()].copy_from_slice(bytes);
        m
    };
    for bind in [3u8, 5, 9, 15] {
        refused(&with(vprintf + 4, &[bind << 4 | 2]), "its binding is none of local, global and weak");
    }
    refused(&with(vprintf + 4, &[0x02]), "an undefined function cannot be local");
    refused(&with(vprintf + 4, &[0x1a]), "names a function the driver supplies but is no function");
    refused(&with(symbol("malloc") + 4, &[0x11]), "names a function the driver supplies but is no function");
    // A function defined in a section of no code: the string table, the symbol table, a constant bank.
    for sec in (1..n).filter(|&i| u64_at(&b, shdr(&b, i) + 8) & 0x4 == 0 && sec_type(&b, i) != 8).take(4) {
        refused(&with(vprintf + 6, &(sec as u16).to_le_bytes()), "a function defined in a section that holds no code");
    }
    // Nor in code: the driver's functions are the driver's (each given the kernel's code crashed
    // CUDA's loader in a context: H100, driver 580, the names family of 2026-12-07). Data of a
    // driver function's name, defined, is not refused.
    let text = (1..n).find(|&i| sec_name(i).starts_with(".text.")).expect("a code section");
    for f in ["vprintf", "malloc", "free"] {
        refused(&with(symbol(f) + 6, &(text as u16).to_le_bytes()), "it defines a function the driver supplies");
    }
    let data = (1..n).find(|&i| sec_name(i).starts_with(".nv.constant0.")).expect("a constant bank");
    inspect(&with(symbol("malloc") + 4, &[0x11, 0, data as u8, (data >> 8) as u8]))
        .unwrap_or_else(|e| panic!("an object named malloc: {e}"));

    // The callgraph: k calls vprintf, malloc and free; an undefined callee that is no function.
    let cg = (1..n).find(|&i| sec_type(&b, i) == 0x7000_0001).expect("a callgraph");
    let cg_at = u64_at(&b, shdr(&b, cg) + 24) as usize;
    let entries = u64_at(&b, shdr(&b, cg) + 32) as usize / 8;
    let free_index = ((symbol("free") - sym_at) / 24) as u32;
    let edge = (0..entries)
        .map(|e| cg_at + 8 * e + 4)
        .find(|&c| u32::from_le_bytes(b[c..c + 4].try_into().unwrap()) == free_index)
        .expect("k calls free in the callgraph");
    // `.nv.reservedSmem.offset0`: an undefined global object (shared memory the driver places).
    let object = (1..sym_count)
        .find(|&k| {
            let s = sym_at + 24 * k;
            b[s + 4] & 0xf == 1 && b[s + 6..s + 8] == [0, 0]
        })
        .expect("an undefined object");
    refused(&with(edge, &(object as u32).to_le_bytes()), "which this code does not define and is no function");
    inspect(&with(edge, &0u32.to_le_bytes())).unwrap_or_else(|e| panic!("callee 0: {e}"));

    // The relocations of .nv.constant4 (vprintf's, malloc's and free's addresses) retargeted at
    // the kernel's parameter bank.
    let rel = (1..n)
        .find(|&i| matches!(sec_type(&b, i), 4 | 9) && sec_name(i).ends_with(".nv.constant4"))
        .expect(".rela.nv.constant4");
    let bank0 = (1..n).find(|&i| sec_name(i).starts_with(".nv.constant0.")).expect("a parameter bank");
    let unrelocated = "is a kernel's constant bank, which nothing relocates";
    refused(&with(shdr(&b, rel) + 44, &(bank0 as u32).to_le_bytes()), unrelocated);
    // Or left on `.nv.constant4`, the module's bank, with its sh_info set to the kernel's code
    // (crashed CUDA's loader in a context: the same campaign).
    let bank4 = (1..n).find(|&i| sec_name(i) == ".nv.constant4").expect(".nv.constant4");
    refused(&with(shdr(&b, bank4) + 44, &(text as u32).to_le_bytes()), unrelocated);
    // A kernel's other banks (`.nv.constant2.<kernel>` in DeepGEMM's and FlashInfer's cubins) are
    // the targets of empty relocation sections only. The parameter bank renamed so (one byte of
    // the section-name table): `.nv.constant4`'s relocations into it are refused, none pass.
    let names_at = u64_at(&b, shdr(&b, u16::from_le_bytes([b[62], b[63]]) as usize) + 24) as usize;
    let digit = names_at + u32::from_le_bytes(b[shdr(&b, bank0)..][..4].try_into().unwrap()) as usize + 12;
    assert_eq!(b[digit], b'0');
    let mut m = with(shdr(&b, rel) + 44, &(bank0 as u32).to_le_bytes());
    m[digit] = b'2';
    refused(&m, unrelocated);
    m[shdr(&b, rel) + 32..][..8].copy_from_slice(&0u64.to_le_bytes());
    inspect(&m).unwrap_or_else(|e| panic!("no relocations into a kernel's bank 2: {e}"));
}

/// The records of `.nv.info` or `.nv.compat` section `i`: (offset of the record, format,
/// attribute, value or length).
fn nv_info_records(b: &[u8], i: usize) -> Vec<(usize, u8, u8, u16)> {
    let (at, size) = (u64_at(b, shdr(b, i) + 24) as usize, u64_at(b, shdr(b, i) + 32) as usize);
    let mut out = Vec::new();
    let mut p = at;
    while p + 4 <= at + size {
        let v = u16::from_le_bytes([b[p + 2], b[p + 3]]);
        out.push((p, b[p], b[p + 1], v));
        p += 4 + if b[p] == 4 { v as usize } else { 0 };
    }
    out
}

/// Attribute 0x5d, which no toolkit writes, in the global `.nv.info`: CUDA 13.0's loader reads
/// its value as an index into a table of 8 (an attribute sweep on the H100, driver 580,
/// 2026-12-07: every value from 8 up crashed the process, in formats 1 to 3, in cubins with
/// kernels and without; 0 to 7 loaded; in a kernel's table and in format 4 every value loaded).
/// Here it takes the place of a 12-byte record of nvcc's global table, padded with two records
/// toolkits write.
#[test]
fn the_global_table_index_stays_in_the_loaders_range() {
    let b = cubin();
    let n = shnum(&b);
    let info_of = |i: usize| u32::from_le_bytes(b[shdr(&b, i) + 44..shdr(&b, i) + 48].try_into().unwrap());
    let global = (1..n).find(|&i| sec_type(&b, i) == 0x7000_0000 && info_of(i) == 0).expect("a global .nv.info");
    let (rec, ..) = *nv_info_records(&b, global)
        .iter()
        .find(|r| r.1 == 4 && r.3 == 8)
        .expect("a 12-byte record in the global .nv.info");
    let with = |first: [u8; 4]| {
        let mut m = b.clone();
        m[rec..rec + 12].copy_from_slice(&[first[0], first[1], first[2], first[3], 3, 0x5f, 1, 1, 3, 0x5f, 1, 1]);
        m
    };
    for format in 1..=3u8 {
        for v in 0..8u16 {
            let [lo, hi] = v.to_le_bytes();
            inspect(&with([format, 0x5d, lo, hi])).unwrap_or_else(|e| panic!("format {format} value {v}: {e}"));
        }
        for v in [8u16, 9, 64, 257, 0xffff] {
            let [lo, hi] = v.to_le_bytes();
            refused(&with([format, 0x5d, lo, hi]), "of the global table, has value");
        }
        // Another attribute with the same value is walked over, as before.
        inspect(&with([format, 0x5c, 1, 1])).unwrap_or_else(|e| panic!("attribute 0x5c: {e}"));
    }
    // Format 4: the 16 bits are a length, not the value (0 bytes here; the loader took 8 too).
    inspect(&with([4, 0x5d, 0, 0])).unwrap_or_else(|e| panic!("format 4: {e}"));
    // In a kernel's table any value loaded: a format-3 record of the first one, relabelled.
    let kernel = (1..n).find(|&i| sec_type(&b, i) == 0x7000_0000 && info_of(i) != 0).expect("a kernel's .nv.info");
    let (at, ..) = *nv_info_records(&b, kernel).iter().find(|r| r.1 == 3).expect("a format-3 record");
    let mut m = b.clone();
    m[at + 1..at + 4].copy_from_slice(&[0x5d, 0xff, 0xff]);
    inspect(&m).unwrap_or_else(|e| panic!("0x5d in a kernel's table: {e}"));
}

/// `.nv.compat`'s records tile it, as `.nv.info`'s do (all 32,590 such sections of the last
/// three extracted sets of NVIDIA's wheels do): a record running past the section, a format
/// no toolkit writes and a section cut inside a record are refused; a section of whole records
/// passes.
#[test]
fn compat_records_tile_their_section() {
    let b = cubin();
    let n = shnum(&b);
    let compat = (1..n).find(|&i| sec_type(&b, i) == 0x7000_0086).expect("nvcc 13 writes .nv.compat for sm_90");
    let (at, size) = (u64_at(&b, shdr(&b, compat) + 24) as usize, u64_at(&b, shdr(&b, compat) + 32) as usize);
    // Its records (the same layout as `.nv.info`'s).
    let records = nv_info_records(&b, compat);
    let (last, last_format, _, last_len) = *records.last().unwrap();
    let last_len = last_len as usize;
    assert_eq!(last + 4 + last_len, at + size, "nvcc's records tile the section");
    assert_eq!(last_format, 4, "nvcc's last record carries a payload");
    let with = |o: usize, bytes: &[u8]| {
        let mut m = b.clone();
        m[o..o + bytes.len()].copy_from_slice(bytes);
        m
    };
    refused(&with(last + 2, &((last_len + 4) as u16).to_le_bytes()), "runs past the section");
    for format in [0u8, 5, 0xff] {
        refused(&with(records[0].0, &[format]), "has unknown format");
    }
    let sized = |s: usize| with(shdr(&b, compat) + 32, &(s as u64).to_le_bytes());
    refused(&sized(size - 2), "runs past the section");
    refused(&sized(last - at + 2), "is cut short");
    inspect(&sized(last - at)).unwrap_or_else(|e| panic!("whole records, the last left out: {e}"));
    // The last record said to carry nothing: its payload (zeros in nvcc's) is read as records.
    assert_eq!(b[last + 4], 0, "nvcc's payload starts with a zero");
    refused(&with(last + 2, &0u16.to_le_bytes()), "has unknown format");
}

/// A section whose name says what it holds has that type: a kernel's code or `.nv.info` named
/// `.note.nv.tkinfo` (sh_name pointed at the tool note's name) crashed CUDA's loader on the H100
/// (driver 580, structured campaign of 2026-12-07, the "names" family); the tool note itself, or
/// the `.note.nv.cuinfo` note under that name, loaded. The same holds for the other names
/// CUDA's loader reads a section by (`NAMED_TYPES` in src/image/cubin/sections.rs).
#[test]
fn a_section_named_for_a_structure_has_its_type() {
    let b = cubin();
    let n = shnum(&b);
    let named =
        |name: &str| (1..n).find(|&i| section_name(&b, i) == name).unwrap_or_else(|| panic!("no section {name}"));
    let name_word = |i: usize| b[shdr(&b, i)..shdr(&b, i) + 4].to_vec();
    let renamed = |i: usize, as_section: usize| {
        let mut m = b.clone();
        m[shdr(&b, i)..shdr(&b, i) + 4].copy_from_slice(&name_word(as_section));
        m
    };
    let (tkinfo, cuinfo) = (named(".note.nv.tkinfo"), named(".note.nv.cuinfo"));
    for victim in [".text.k", ".nv.info.k", ".nv.constant0.k", ".nv.info"] {
        refused(&renamed(named(victim), tkinfo), "is named .note.nv.tkinfo but is of type");
    }
    inspect(&renamed(cuinfo, tkinfo)).unwrap_or_else(|e| panic!("the cuinfo note named .note.nv.tkinfo: {e}"));
    // Code named as a table, a table named as code, a symbol table named as strings.
    refused(&renamed(named(".text.k"), named(".nv.info.k")), "is named .nv.info.k but is of type 0x1, not 0x70000000");
    refused(&renamed(named(".nv.info.k"), named(".text.k2")), "is named .text.k2 but is of type 0x70000000, not 0x1");
    refused(&renamed(named(".symtab"), named(".strtab")), "is named .strtab but is of type 0x2, not 0x3");
    // Names that say nothing of a type are free: the constant bank named as another kernel's.
    inspect(&renamed(named(".nv.constant0.k"), named(".nv.constant0.k2")))
        .unwrap_or_else(|e| panic!("a constant bank named as another: {e}"));
    // A PROGBITS `.nv.compat` (FlashInfer 0.6.13's sm_100a cubins have one) is not checked.
    let compat = (1..n).find(|&i| sec_type(&b, i) == 0x7000_0086).expect("nvcc 13 writes .nv.compat for sm_90");
    let mut m = b.clone();
    m[shdr(&b, compat) + 4..shdr(&b, compat) + 8].copy_from_slice(&1u32.to_le_bytes());
    inspect(&m).unwrap_or_else(|e| panic!("a PROGBITS .nv.compat: {e}"));
}

/// Kernel `k`'s `.nv.info` section, the size of its code, and its EXIT_INSTR_OFFSETS record:
/// where it is and its payload's length.
fn exit_list_of_k(b: &[u8]) -> (usize, u32, usize, u16) {
    let n = shnum(b);
    let info = (1..n).find(|&i| section_name(b, i) == ".nv.info.k").expect(".nv.info.k");
    let code = u64_at(b, shdr(b, (1..n).find(|&i| section_name(b, i) == ".text.k").unwrap()) + 32) as u32;
    let (exit, _, _, len) = *nv_info_records(b, info)
        .iter()
        .find(|r| r.1 == 4 && r.2 == 0x1c)
        .expect("nvcc lists the kernel's exits (EXIT_INSTR_OFFSETS)");
    (info, code, exit, len)
}

/// EIATTR_JUMPTABLE_RELOCS (0x03), which no cubin of NVIDIA's wheels holds, lists instruction
/// offsets in the kernel's code: a kernel's 12-byte parameter record relabelled 0x03 crashed
/// CUDA's loader on the H100 (driver 580, the campaign's every-attribute sweep of a kernel's
/// `.nv.info`, in cubins of nvcc and of six NVIDIA libraries). An offset past the kernel is
/// refused; one of its instructions passes.
#[test]
fn jump_table_relocations_point_into_the_kernel() {
    let b = cubin();
    let (info, code, exit, _) = exit_list_of_k(&b);
    let relabelled = |first: u32| {
        let mut m = b.clone();
        m[exit + 1] = 0x03;
        m[exit + 4..exit + 8].copy_from_slice(&first.to_le_bytes());
        m
    };
    for o in [0, 8, code - 16, code - 8] {
        inspect(&relabelled(o)).unwrap_or_else(|e| panic!("offset {o:#x} of a {code}-byte kernel: {e}"));
    }
    for o in [code, code + 8, 0x0008_0001, 0x1000_0000, 4] {
        refused(&relabelled(o), "lists instruction offset");
    }
    // The 12-byte parameter record relabelled, as in the campaign.
    let (param, ..) = *nv_info_records(&b, info).iter().find(|r| r.1 == 4 && r.2 == 0x17).expect("KPARAM_INFO");
    let mut m = b.clone();
    m[param + 1] = 0x03;
    refused(&m, "lists instruction offset");
}

/// An instruction-offset list whose payload is records of its own: TensorRT 8.4 to 8.6's
/// hand-assembled plugin kernel (`libnvinfer_plugin`, sm_75, sm_80 and sm_90) has an
/// EXIT_INSTR_OFFSETS record holding an EXIT_INSTR_OFFSETS record (the one exit) and an
/// INDIRECT_BRANCH_TARGETS record. Made here in place from nvcc's two-exit list of `k`: its first
/// word becomes the header of a one-exit record. The nested records must tile the payload, be
/// lists or words of attributes toolkits write so, and their offsets instructions of the kernel.
#[test]
fn an_offset_list_may_hold_records_of_its_own() {
    let b = cubin();
    let (_, code, exit, len) = exit_list_of_k(&b);
    assert_eq!(len, 8, "nvcc's k has two exits");
    let nested = |header: u32, second: u32| {
        let mut m = b.clone();
        m[exit + 4..exit + 8].copy_from_slice(&header.to_le_bytes());
        m[exit + 8..exit + 12].copy_from_slice(&second.to_le_bytes());
        m
    };
    let last = u32::from_le_bytes(b[exit + 8..exit + 12].try_into().unwrap());
    // Format 4, the attribute, a 4-byte length: TensorRT's header word is 0x00041c04.
    let record = |attr: u32, len: u32| 4 | attr << 8 | len << 16;
    assert_eq!(record(0x1c, 4), 0x0004_1c04);
    inspect(&nested(record(0x1c, 4), last)).unwrap_or_else(|e| panic!("TensorRT's form, nvcc's exit: {e}"));
    inspect(&nested(record(0x34, 4), 0x10)).unwrap_or_else(|e| panic!("a branch-target record: {e}"));
    // The nested exit past the code, or not an instruction's start.
    for o in [code, code + 8, last + 4, u32::MAX - 7] {
        refused(&nested(record(0x1c, 4), o), "lists instruction offset");
    }
    // Records that do not tile the payload, of a shape not a list, of no attribute toolkits
    // write, in another format, or empty.
    for (header, why) in [
        (record(0x1c, 8), "runs past"),
        (record(0x17, 4), "12-byte record"),
        (record(0x99, 4), "unknown attribute"),
        (3 | 0x1c << 8 | 4 << 16, "format 3"),
        (record(0x1c, 0), "empty"),
    ] {
        let m = nested(header, last);
        match inspect(&m) {
            Err(e) => assert!(e.to_string().contains("lists instruction offset"), "{why}: refused for {e}"),
            Ok(_) => panic!("{why}: a payload that is no records of an offset list was accepted"),
        }
    }
}

/// `.nv.callgraph` holds lists that markers open, and only two are of (caller, callee) pairs:
/// the call edges (after 0xffffffff) and an indirect call's possible callees (after
/// 0xfffffffc). The second word of the other two lists (after 0xfffffffe and 0xfffffffd) is
/// no symbol: cuFFT 12.4's sm_100 code holds the index of an undefined object there, and CUDA
/// loaded every symbol index and values past the table in both lists on the H100 (a sweep of
/// an nvlink-linked cubin with indirect calls, 2026-12-07). An undefined object as a callee
/// (an edge to `free` pointed at `.nv.reservedSmem.offset0` crashed CUDA's loader) is refused in
/// the two lists of callees.
#[test]
fn callgraph_lists_of_callees_and_of_other_numbers() {
    let b = driver_functions_cubin();
    let n = shnum(&b);
    let cg = (1..n).find(|&i| sec_type(&b, i) == 0x7000_0001).expect("a callgraph");
    let at = u64_at(&b, shdr(&b, cg) + 24) as usize;
    let entries: Vec<(u32, u32)> = (0..u64_at(&b, shdr(&b, cg) + 32) as usize / 8)
        .map(|e| {
            let w = |o: usize| u32::from_le_bytes(b[at + 8 * e + o..at + 8 * e + o + 4].try_into().unwrap());
            (w(0), w(4))
        })
        .collect();
    let (m1, m2, m3, m4) = ((0, u32::MAX), (0, u32::MAX - 1), (0, u32::MAX - 2), (0, u32::MAX - 3));
    // nvcc's: the three edges of k, then the three other lists, empty.
    assert_eq!(entries.len(), 7, "nvcc's callgraph: {entries:?}");
    assert_eq!((entries[0], entries[4], entries[5], entries[6]), (m1, m2, m3, m4), "{entries:?}");
    let (k, callee) = entries[1];
    let symtab = (1..n).find(|&i| sec_type(&b, i) == 2).expect("a symbol table");
    let sym_at = u64_at(&b, shdr(&b, symtab) + 24) as usize;
    let object = (1..u64_at(&b, shdr(&b, symtab) + 32) as usize / 24)
        .find(|&s| b[sym_at + 24 * s + 4] & 0xf == 1 && b[sym_at + 24 * s + 6..sym_at + 24 * s + 8] == [0, 0])
        .expect("an undefined object (.nv.reservedSmem.offset0)") as u32;
    let laid_out = |list: &[(u32, u32)]| {
        let mut m = b.clone();
        for (e, &(a, c)) in list.iter().enumerate() {
            m[at + 8 * e..at + 8 * e + 4].copy_from_slice(&a.to_le_bytes());
            m[at + 8 * e + 4..at + 8 * e + 8].copy_from_slice(&c.to_le_bytes());
        }
        m
    };
    for value in [object, 0x39ff, callee] {
        // In the third list, and in the second.
        inspect(&laid_out(&[m1, (k, callee), m2, m3, (k, value), m4, (k, callee)]))
            .unwrap_or_else(|e| panic!("({k}, {value}) after 0xfffffffd: {e}"));
        inspect(&laid_out(&[m1, (k, callee), m2, (k, value), m3, m4, (k, callee)]))
            .unwrap_or_else(|e| panic!("({k}, {value}) after 0xfffffffe: {e}"));
    }
    let why = "which this code does not define and is no function";
    refused(&laid_out(&[m1, (k, callee), m2, m3, m4, (k, object), (k, callee)]), why);
    refused(&laid_out(&[m1, (k, object), m2, m3, m4, (k, callee), (k, callee)]), why);
    // Before any marker the entries are taken for edges.
    refused(&laid_out(&[(k, object), m1, m2, m3, m4, (k, callee), (k, callee)]), why);
}
