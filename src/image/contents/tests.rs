use super::*;

/// A section of a test cubin: name, type, sh_link, sh_info, contents.
struct Sec {
    name: String,
    ty: u32,
    link: u32,
    info: u32,
    body: Vec<u8>,
}

fn sec(name: &str, ty: u32, body: Vec<u8>) -> Sec {
    Sec { name: name.into(), ty, link: 0, info: 0, body }
}

/// A minimal ELF64 cubin header (sm from `flags` as ABI version 8 lays it out) with a section
/// name table and the given sections, numbered from 1 (just enough for `cubin_tables`;
/// `inspect` would refuse it).
fn cubin(sm: u32, sections: Vec<Sec>) -> Vec<u8> {
    let mut names = vec![0u8];
    let mut bodies = Vec::new();
    let mut heads = vec![(0u32, 0u32, 0usize, 0usize, 0u32, 0u32)];
    let mut at = 64usize;
    let shstrtab = Sec { name: ".shstrtab".into(), ty: 3, link: 0, info: 0, body: Vec::new() };
    for s in sections.into_iter().chain([shstrtab]) {
        let name_off = names.len() as u32;
        names.extend_from_slice(s.name.as_bytes());
        names.push(0);
        let b = if s.name == ".shstrtab" { names.clone() } else { s.body };
        heads.push((name_off, s.ty, at, b.len(), s.link, s.info));
        at += b.len();
        bodies.extend_from_slice(&b);
    }
    let shoff = 64 + bodies.len();
    let mut d = vec![0u8; 64];
    d[..4].copy_from_slice(b"\x7fELF");
    d[8] = 8;
    d[48..52].copy_from_slice(&((sm << 8) | 0x06000004).to_le_bytes());
    d[40..48].copy_from_slice(&(shoff as u64).to_le_bytes());
    d[58..60].copy_from_slice(&64u16.to_le_bytes());
    d[60..62].copy_from_slice(&(heads.len() as u16).to_le_bytes());
    d[62..64].copy_from_slice(&((heads.len() - 1) as u16).to_le_bytes());
    d.extend_from_slice(&bodies);
    for (name, ty, off, size, link, info) in heads {
        let mut h = [0u8; 64];
        h[0..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&ty.to_le_bytes());
        h[24..32].copy_from_slice(&(off as u64).to_le_bytes());
        h[32..40].copy_from_slice(&(size as u64).to_le_bytes());
        h[40..44].copy_from_slice(&link.to_le_bytes());
        h[44..48].copy_from_slice(&info.to_le_bytes());
        d.extend_from_slice(&h);
    }
    d
}

fn kparam(ordinal: u16, offset: u16, size: u32) -> Vec<u8> {
    let mut r = vec![4, ATTR_KPARAM_INFO, 12, 0, 0, 0, 0, 0];
    r.extend_from_slice(&ordinal.to_le_bytes());
    r.extend_from_slice(&offset.to_le_bytes());
    r.extend_from_slice(&((size << 18) | 0x1f000).to_le_bytes());
    r
}

/// A format-4 record of 32-bit words.
fn words(attr: u8, w: &[u32]) -> Vec<u8> {
    let mut r = vec![4, attr];
    r.extend_from_slice(&((w.len() * 4) as u16).to_le_bytes());
    for x in w {
        r.extend_from_slice(&x.to_le_bytes());
    }
    r
}

/// A 24-byte ELF64 symbol.
fn symbol(name: u32, info: u8, other: u8, shndx: u16, size: u64) -> Vec<u8> {
    let mut s = Vec::with_capacity(24);
    s.extend_from_slice(&name.to_le_bytes());
    s.extend_from_slice(&[info, other]);
    s.extend_from_slice(&shndx.to_le_bytes());
    s.extend_from_slice(&0u64.to_le_bytes());
    s.extend_from_slice(&size.to_le_bytes());
    s
}

#[test]
fn parameters_come_out_in_ordinal_order_with_sizes_from_the_high_bits() {
    // Toolkits list the parameters last to first, as here.
    let mut info = kparam(2, 16, 8);
    info.extend(kparam(1, 8, 4));
    info.extend(kparam(0, 0, 1));
    info.extend([3, ATTR_CBANK_PARAM_SIZE, 24, 0]);
    let d = cubin(
        80,
        vec![
            sec(".nv.info", SHT_CUDA_INFO, vec![]),
            sec(".nv.info.k", SHT_CUDA_INFO, info),
            sec(".text.k", 1, vec![0; 8]),
        ],
    );
    let (ks, _) = cubin_tables(&d);
    assert_eq!(ks.len(), 1, "{ks:?}");
    assert_eq!(ks[0].name, "k");
    assert_eq!(
        ks[0].params,
        vec![Param { offset: 0, size: 1 }, Param { offset: 8, size: 4 }, Param { offset: 16, size: 8 }]
    );
    assert_eq!(ks[0].param_bytes, 24);
}

#[test]
fn a_kernel_without_parameters_has_an_empty_layout_and_a_cut_table_stops_cleanly() {
    let mut cut = kparam(0, 0, 8);
    cut.truncate(7);
    let d = cubin(
        80,
        vec![sec(".nv.info.none", SHT_CUDA_INFO, vec![3, 0x1b, 255, 0]), sec(".nv.info.cut", SHT_CUDA_INFO, cut)],
    );
    let (ks, _) = cubin_tables(&d);
    assert_eq!(ks.len(), 2);
    assert_eq!((ks[0].params.len(), ks[0].param_bytes), (0, 0));
    assert_eq!((ks[1].params.len(), ks[1].param_bytes), (0, 0));
    // Every prefix of the image: no panic, and never more kernels than the whole has.
    for n in 0..d.len() {
        assert!(cubin_tables(&d[..n]).0.len() <= 2);
    }
}

/// Two kernels, `a` (text section 4) and `b` (text section 5), with the global table naming
/// them by symbol (symbols 1 and 2), shared memory for `a`, a launch bound for `b`, and two
/// globals, one in constant memory.
fn resource_cubin(sm: u32) -> Vec<u8> {
    // Sections: 1 .strtab, 2 .symtab, 3 .nv.info, 4 .text.a, 5 .text.b, 6 .nv.info.a,
    // 7 .nv.info.b, 8 .nv.shared.a, 9 .nv.constant0.a, 10 .nv.global, 11 .nv.constant3.
    let strtab = b"\0a\0b\0table\0coeffs\0.local\0".to_vec();
    let mut syms = symbol(0, 0, 0, 0, 0);
    syms.extend(symbol(1, 0x12, 0x10, 4, 64)); // a: GLOBAL FUNC in section 4
    syms.extend(symbol(3, 0x12, 0x10, 5, 64)); // b
    syms.extend(symbol(5, 0x01, 0, 10, 512)); // table: LOCAL OBJECT in .nv.global
    syms.extend(symbol(11, 0x01, 0, 11, 256)); // coeffs in .nv.constant3
    syms.extend(symbol(18, 0x01, 0, 10, 4)); // a name that starts with '.' is not a variable
    let mut global = words(ATTR_REGCOUNT, &[1, 40]);
    global.extend(words(ATTR_FRAME_SIZE, &[1, 256]));
    global.extend(words(ATTR_MIN_STACK_SIZE, &[1, 288]));
    global.extend(words(ATTR_REGCOUNT, &[2, 16]));
    global.extend(words(ATTR_FRAME_SIZE, &[2, 0]));
    let mut info_b = kparam(0, 0, 8);
    info_b.extend(words(ATTR_MAX_THREADS, &[256, 1, 1]));
    info_b.extend(words(ATTR_REQNTID, &[128, 2, 1]));
    cubin(
        sm,
        vec![
            sec(".strtab", 3, strtab),
            Sec { name: ".symtab".into(), ty: SHT_SYMTAB, link: 1, info: 3, body: syms },
            Sec { name: ".nv.info".into(), ty: SHT_CUDA_INFO, link: 2, info: 0, body: global },
            sec(".text.a", 1, vec![0; 64]),
            sec(".text.b", 1, vec![0; 64]),
            Sec { name: ".nv.info.a".into(), ty: SHT_CUDA_INFO, link: 2, info: 4, body: kparam(0, 0, 4) },
            Sec { name: ".nv.info.b".into(), ty: SHT_CUDA_INFO, link: 2, info: 5, body: info_b },
            sec(".nv.shared.a", 8, vec![0; 1024 + 100]),
            sec(".nv.constant0.a", 1, vec![0; 364]),
            sec(".nv.global", 8, vec![0; 516]),
            sec(".nv.constant3", 1, vec![0; 256]),
        ],
    )
}

#[test]
fn resources_come_from_the_global_table_by_symbol_and_from_each_kernels_sections() {
    let (ks, gs) = cubin_tables(&resource_cubin(90));
    let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let (a, b) = (ks[0].resources, ks[1].resources);
    assert_eq!((a.registers, a.local_bytes, a.stack_bytes), (Some(40), Some(256), Some(288)));
    // sm_90: the section holds the 1 KiB CUDA reserves, then the kernel's 100 bytes.
    assert_eq!((a.shared_bytes, a.constant_bytes), (Some(100), Some(364)));
    assert_eq!((a.max_threads, a.required_block), (None, None));
    assert_eq!((b.registers, b.local_bytes, b.stack_bytes), (Some(16), Some(0), None));
    assert_eq!((b.shared_bytes, b.constant_bytes), (Some(0), None));
    assert_eq!((b.max_threads, b.required_block), (Some([256, 1, 1]), Some([128, 2, 1])));
    assert_eq!(
        gs,
        vec![
            GlobalInfo { name: "table".into(), bytes: Some(512), space: Space::Global },
            GlobalInfo { name: "coeffs".into(), bytes: Some(256), space: Space::Constant },
        ]
    );
    // Before sm_90 the section holds the kernel's bytes alone.
    let (ks, _) = cubin_tables(&resource_cubin(80));
    assert_eq!(ks[0].resources.shared_bytes, Some(1124));
    // Any prefix, and any single byte changed: no panic, never more than there is.
    let d = resource_cubin(90);
    for n in 0..d.len() {
        let (k, g) = cubin_tables(&d[..n]);
        assert!(k.len() <= 2 && g.len() <= 2);
    }
    for i in 0..d.len() {
        let mut m = d.clone();
        m[i] ^= 0xff;
        let (k, g) = cubin_tables(&m);
        assert!(k.len() <= 3 && g.len() <= 6, "byte {i}: {k:?} {g:?}");
    }
}

#[test]
fn names_that_are_not_utf8_keep_their_bytes_as_escapes() {
    let d = cubin(90, vec![sec(".nv.info.k\u{1b}[2J", SHT_CUDA_INFO, vec![])]);
    let (ks, _) = cubin_tables(&d);
    assert_eq!(ks[0].name, "k\u{1b}[2J", "the name is data: quoting is for who prints it");
    assert_eq!(name_text(b"k\xff\xfez"), "k\\xff\\xfez");
}

#[test]
fn the_gpu_runs_the_newest_sass_it_can_else_the_newest_ptx() {
    let codes = [ArchCode::sass(80), ArchCode::sass(90), ArchCode::ptx(90), ArchCode::ptx(80)];
    assert_eq!(entry_for_gpu(&codes, 90), Some(1));
    assert_eq!(entry_for_gpu(&codes, 86), Some(0));
    assert_eq!(entry_for_gpu(&codes, 100), Some(2)); // no SASS for sm_100: the newest PTX
    assert_eq!(entry_for_gpu(&codes, 75), None);
    assert_eq!(entry_for_gpu(&[ArchCode::lto_ir(90)], 90), None);
}

const PTX: &str = r#"//
// Generated by NVIDIA NVVM Compiler
.version 9.0
.target sm_90
.address_size 64

	// .globl	with_shared
.const .align 4 .b8 coeffs[256];
.global .align 4 .u32 counter;
.global .attribute(.managed) .align 8 .u64 m;
.global .align 4 .b8 table[4][32] = {1, 2};
.const .align 4 .b8 init[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4};
.extern .global .align 4 .u32 elsewhere;
.global .align 1 .b8 $str[3] = {104, 105, 0};
/* .global .u32 commented_out; */
.file 1 "/src/k;{weird}.cu"

.func  (.param .b32 func_retval0) _Z3recPfi(
	.param .b64 _Z3recPfi_param_0
)
{
	.reg .b32 %r<2>;
	ret;
}

.visible .entry with_shared(
	.param .u64 with_shared_param_0,
	.param .u32 with_shared_param_1
)
.maxntid 256, 1, 1
{
	.shared .align 4 .b8 _ZZ11with_sharedE4tile[2048];
	{ .reg .b32 inner; }
	ret;
}

.visible .entry mixed(
	.param .u8 mixed_param_0,
	.param .align 8 .b8 mixed_param_1[16],
	.param .u16 mixed_param_2,
	.param .u64 .ptr .global .align 8 mixed_param_3
)
.reqntid 64
{
	ret;
}

.visible .entry no_params()
{
	ret;
}

.extern .entry declared_only(
	.param .u64 x
);
"#;

#[test]
fn ptx_kernels_have_their_parameter_layout_and_launch_bounds() {
    let (ks, gs) = ptx::tables(PTX.as_bytes());
    let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["with_shared", "mixed", "no_params"]);
    assert_eq!(ks[0].params, vec![Param { offset: 0, size: 8 }, Param { offset: 8, size: 4 }]);
    assert_eq!(ks[0].param_bytes, 12);
    assert_eq!(ks[0].resources.max_threads, Some([256, 1, 1]));
    // char at 0, the 16-byte struct at 8, short at 24, pointer at 32: 40 bytes, as the cubin's
    // own table says for the same kernel.
    assert_eq!(
        ks[1].params,
        vec![
            Param { offset: 0, size: 1 },
            Param { offset: 8, size: 16 },
            Param { offset: 24, size: 2 },
            Param { offset: 32, size: 8 }
        ]
    );
    assert_eq!(ks[1].param_bytes, 40);
    assert_eq!((ks[1].resources.max_threads, ks[1].resources.required_block), (None, Some([64, 1, 1])));
    assert_eq!((ks[2].params.len(), ks[2].param_bytes), (0, 0));
    // The JIT compiler decides these.
    assert_eq!(ks[0].resources.registers, None);
    assert_eq!(ks[0].resources.shared_bytes, None);

    let g: Vec<(&str, Option<u64>, Space)> = gs.iter().map(|g| (g.name.as_str(), g.bytes, g.space)).collect();
    assert_eq!(
        g,
        [
            ("coeffs", Some(256), Space::Constant),
            ("counter", Some(4), Space::Global),
            ("m", Some(8), Space::Global),
            ("table", Some(128), Space::Global),
            ("init", Some(16), Space::Constant),
            ("$str", Some(3), Space::Global),
        ]
    );
    // Any prefix: no panic.
    for n in 0..PTX.len() {
        let _ = ptx::tables(&PTX.as_bytes()[..n]);
    }
}

#[test]
fn fatbin_entries_are_listed_with_sizes_compression_and_their_ptx_kernels() {
    use crate::fuzzing::{fatbin, fatbin_entry, Packing, FATBIN_FLAGS_PLAIN, FATBIN_KIND_PTX};
    let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p) { ret; }\n.global .u32 g;\n\0\0\0";
    for packing in [Packing::Plain, Packing::Zstd, Packing::Lz4] {
        let f = fatbin(&[fatbin_entry(FATBIN_KIND_PTX, 90, FATBIN_FLAGS_PLAIN, ptx.as_bytes(), packing)]);
        let c = contents(&f);
        assert!(c.verdict.is_ok(), "{packing:?}: {:?}", c.verdict);
        assert_eq!(c.kind, CodeKind::Fatbin);
        assert_eq!(c.entries.len(), 1, "{c:?}");
        let e = &c.entries[0];
        assert_eq!(e.code, ArchCode::ptx(90));
        let want = match packing {
            Packing::Plain => Compression::None,
            Packing::Zstd => Compression::Zstd,
            _ => Compression::Lz4,
        };
        assert_eq!(e.compression, want);
        assert!(e.code_bytes >= ptx.len() as u64, "{e:?}");
        let names: Vec<&str> = e.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["k"], "{packing:?}");
        assert_eq!(e.kernels[0].params, vec![Param { offset: 0, size: 8 }]);
        assert_eq!(e.globals.len(), 1);
        for n in 0..f.len() {
            let _ = contents(&f[..n]);
        }
    }
    // A PTX text on its own.
    let c = contents(ptx.as_bytes());
    assert_eq!((c.kind, c.kernels.len(), c.globals.len()), (CodeKind::Ptx, 1, 1));
}

/// A kernel's `.nv.info.<name>` with these KPARAM_INFO records (ordinal, offset, size) and,
/// where given, CBANK_PARAM_SIZE.
fn kernel_table(params: &[(u16, u16, u32)], bytes: Option<u16>) -> Vec<u8> {
    let mut v: Vec<u8> = params.iter().rev().flat_map(|&(o, off, n)| kparam(o, off, n)).collect();
    if let Some(b) = bytes {
        v.extend([3, ATTR_CBANK_PARAM_SIZE]);
        v.extend(b.to_le_bytes());
    }
    v
}

/// `cubin` with e_machine EM_CUDA, as `code_kind_of` wants it.
fn cuda_cubin(sections: Vec<Sec>) -> Vec<u8> {
    let mut d = cubin(90, sections);
    d[18..20].copy_from_slice(&190u16.to_le_bytes());
    d
}

/// A PARAM_CBANK record: the parameters in constant bank section 11 at 0x210, `size` bytes.
fn bank(size: u16) -> Vec<u8> {
    let mut v = vec![4, ATTR_PARAM_CBANK, 8, 0, 11, 0, 0, 0, 0x10, 0x02];
    v.extend(size.to_le_bytes());
    v
}

/// A CUDA cubin with, per (kernel, table), a section `.text.<kernel>` (number 2i + 1) and its
/// `.nv.info.<kernel>` (2i + 2) linked to it by sh_info, as nvcc writes them.
fn with_code(kernels: Vec<(&str, Vec<u8>)>) -> Vec<u8> {
    let mut secs = Vec::new();
    for (i, (k, table)) in kernels.into_iter().enumerate() {
        secs.push(sec(&format!(".text.{k}"), 1, vec![0; 8]));
        secs.push(Sec {
            name: format!(".nv.info.{k}"),
            ty: SHT_CUDA_INFO,
            link: 0,
            info: 2 * i as u32 + 1,
            body: table,
        });
    }
    cuda_cubin(secs)
}

/// Set section `i`'s sh_info in a cubin made by `cubin`.
fn set_info(d: &mut [u8], i: usize, info: u32) {
    let shoff = u64::from_le_bytes(d[40..48].try_into().unwrap()) as usize;
    d[shoff + 64 * i + 44..shoff + 64 * i + 48].copy_from_slice(&info.to_le_bytes());
}

#[test]
fn layouts_for_the_loader_are_kept_only_where_the_tables_settle_them() {
    let p = |offset, size| Param { offset, size };
    let d = with_code(vec![
        ("good", kernel_table(&[(0, 0, 8), (1, 8, 4), (2, 16, 16)], Some(32))),
        ("none", kernel_table(&[], Some(0))),
        ("gap", kernel_table(&[(0, 0, 8), (2, 8, 4)], Some(12))),
        ("twice", kernel_table(&[(0, 0, 8), (0, 8, 8)], Some(16))),
        ("overlap", kernel_table(&[(0, 0, 8), (1, 4, 4)], Some(12))),
        ("past", kernel_table(&[(0, 0, 8), (1, 8, 8)], Some(12))),
        ("empty", kernel_table(&[(0, 0, 0)], Some(8))),
        ("unsized", kernel_table(&[(0, 0, 8)], None)),
        ("bare", vec![]),
        ("banked", [kernel_table(&[(0, 0, 8)], Some(8)), bank(8)].concat()),
        ("misbanked", [kernel_table(&[(0, 0, 8)], Some(8)), bank(16)].concat()),
        ("bank_only", bank(0)),
        ("phantom", kernel_table(&[], Some(16))),
    ]);
    let got = param_layouts(&d).expect("a cubin");
    let names: Vec<&[u8]> = got.iter().map(|(n, _)| &n[..]).collect();
    assert_eq!(names, [&b"banked"[..], b"bare", b"good", b"none"]);
    assert_eq!(&got[0].1[..], [p(0, 8)]);
    assert!(got[1].1.is_empty());
    assert_eq!(&got[2].1[..], [p(0, 8), p(8, 4), p(16, 16)]);
    assert!(got[3].1.is_empty());
    // A table whose info link is another kernel's code, or no code at all, settles nothing.
    let mut crossed = with_code(vec![("a", kernel_table(&[(0, 0, 8)], Some(8))), ("b", kernel_table(&[], Some(0)))]);
    set_info(&mut crossed, 2, 3); // .nv.info.a -> .text.b
    set_info(&mut crossed, 4, 1); // .nv.info.b -> .text.a
    assert!(param_layouts(&crossed).unwrap().is_empty());
    let unlinked = cuda_cubin(vec![sec(".nv.info.k", SHT_CUDA_INFO, kernel_table(&[(0, 0, 8)], Some(8)))]);
    assert!(param_layouts(&unlinked).unwrap().is_empty());

    // In a fatbin: entries that agree give the layout, entries that disagree leave it out.
    use crate::fuzzing::{fatbin, fatbin_entry, Packing, FATBIN_FLAGS_PLAIN, FATBIN_KIND_ELF, FATBIN_KIND_PTX};
    let a = with_code(vec![("k", kernel_table(&[(0, 0, 8)], Some(8)))]);
    let b = with_code(vec![("k", kernel_table(&[(0, 0, 4)], Some(4)))]);
    let elf = |c: &[u8], packing| fatbin_entry(FATBIN_KIND_ELF, 90, FATBIN_FLAGS_PLAIN, c, packing);
    let same = param_layouts(&fatbin(&[elf(&a, Packing::Plain), elf(&a, Packing::Plain)])).unwrap();
    assert_eq!(same.len(), 1);
    assert_eq!(&same[0].1[..], [p(0, 8)]);
    assert!(param_layouts(&fatbin(&[elf(&a, Packing::Plain), elf(&b, Packing::Plain)])).unwrap().is_empty());
    // Anything but plain SASS: no answer from the image at all.
    let ptx = fatbin_entry(FATBIN_KIND_PTX, 90, FATBIN_FLAGS_PLAIN, b".version 8.0\n.target sm_90\n", Packing::Plain);
    assert_eq!(param_layouts(&fatbin(&[elf(&a, Packing::Plain), ptx])), None);
    assert_eq!(param_layouts(&fatbin(&[elf(&a, Packing::Zstd)])), None);
    assert_eq!(param_layouts(b".version 8.0\n.target sm_90\n"), None);
    // Every prefix: no panic.
    let f = fatbin(&[elf(&a, Packing::Plain), elf(&d, Packing::Plain)]);
    for n in 0..f.len() {
        let _ = param_layouts(&f[..n]);
    }
}

/// The string at `at` as an ELF reader reads it: up to its NUL, empty with none before the end.
fn c_string_reference(table: &[u8], at: usize) -> &[u8] {
    let rest = table.get(at..).unwrap_or_default();
    rest.iter().position(|&b| b == 0).map_or(&[][..], |n| &rest[..n])
}

/// `Strings` answers as reading each string whole would: over tables of NULs, short names and
/// runs without a NUL, at every offset (and past the end), for prefixes and whole names.
#[test]
fn strings_read_as_whole_strings_do() {
    let tables: [&[u8]; 6] = [
        b"",
        b"\0",
        b"abc",
        b"\0.nv.info\0.nv.info.k\0.text.k\0xyz",
        b".nv.info.a.nv.info.b\0\0.nv.shared.\0tail-without-nul",
        b"\0\0ab\0a\0\0",
    ];
    let probes: [&[u8]; 7] = [b"a", b"ab", b".nv.info", b".nv.info.", b".nv.info.k", b".text.", b".nv.shared."];
    for table in tables {
        let s = Strings::new(table);
        for at in 0..=table.len() as u32 + 2 {
            let whole = c_string_reference(table, at as usize);
            assert_eq!(s.take(at), Some(whole), "take at {at} of {table:?}");
            for p in probes {
                assert_eq!(s.starts_with(at, p), whole.starts_with(p), "starts_with {p:?} at {at} of {table:?}");
                assert_eq!(s.is(at, &[p]), whole == p, "is {p:?} at {at} of {table:?}");
                assert_eq!(s.is(at, &[b".text.", p]), whole == [&b".text."[..], p].concat(), "is .text.+{p:?} at {at}");
            }
        }
    }
}

/// Names that share their bytes cost no more than the table: taking one long string over and
/// over stops once twice the table and 64 KiB are spent, having read no more than that.
#[test]
fn strings_taken_whole_are_charged_to_the_table_size() {
    let mut table = vec![0u8];
    table.extend(std::iter::repeat_n(b'a', 1 << 20));
    table.push(0);
    let s = Strings::new(&table);
    let taken = (0..1000).map_while(|_| s.take(1)).count();
    assert_eq!(taken, 2, "a 1 MiB name taken {taken} times from a 1 MiB table");
    assert_eq!(s.take(0), None, "the budget is spent: even an empty name is refused");
    // A table's own names, each once, fit: every suffix offset of a short table.
    let names = b"\0.text.k\0.nv.info.k\0g\0";
    let s = Strings::new(names);
    assert!((0..names.len() as u32).all(|at| s.take(at).is_some()));
}
