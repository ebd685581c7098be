#!/usr/bin/env python3
"""What NVIDIA's toolchains write, field by field, over a real-world corpus (a folder filled by
scripts/real_world_fatbins.py): every cubin (bare, or an ELF entry of a fatbin, decompressed)
and every entry header, tallied by the fields cudyn's checks look at. The evidence behind the
allowlist table in docs/hardening.md.
  usage: scripts/corpus_fields.py CORPUS [--jobs N] [--limit N] > fields.txt
Needs the `lz4` and `zstandard` Python packages for compressed entries.
"""
import collections
import multiprocessing
import os
import struct
import sys

import lz4.block
import zstandard

SHT_NOBITS = 8


def entries(c):
    off, total = 16, min(len(c), 16 + struct.unpack_from("<Q", c, 8)[0])
    while off + 64 <= total:
        kind, _, hs, ps = struct.unpack_from("<HHIQ", c, off)
        csize, opt_at = struct.unpack_from("<II", c, off + 16)
        minor, major, arch, name_off, name_len = struct.unpack_from("<HHIII", c, off + 24)
        flags, w30, usize = struct.unpack_from("<QQQ", c, off + 40)
        if hs < 64 or off + hs + ps > total:
            return
        header = c[off:off + hs]
        payload = c[off + hs:off + hs + ps]
        yield dict(kind=kind, hs=hs, ps=ps, csize=csize, opt_at=opt_at, version=(major, minor), arch=arch,
                   name=(name_off, name_len), flags=flags, w30=w30, usize=usize, header=header, payload=payload,
                   off=off)
        off += hs + ps


def body(e):
    if e["flags"] & 0x2000:
        return lz4.block.decompress(e["payload"][:e["csize"]], uncompressed_size=e["usize"])
    if e["flags"] & 0x8000:
        return zstandard.ZstdDecompressor().decompress(e["payload"][:e["csize"]], max_output_size=e["usize"])
    return e["payload"]


def header_extension(e):
    """(position, byte) of each nonzero extension byte outside the name and options."""
    h = e["header"]
    used = []
    no, nl = e["name"]
    if nl:
        used.append((no, no + nl + 1))
    if e["opt_at"]:
        at = e["opt_at"]
        if at + 8 <= len(h):
            oo, ol = struct.unpack_from("<II", h, at)
            used.append((at, at + 8))
            if ol:
                used.append((oo, oo + ol))
    return [(i, h[i]) for i in range(64, len(h)) if h[i] and not any(a <= i < z for a, z in used)]


def sections(b):
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    if shoff == 0 or shnum == 0 or shoff + shnum * 64 > len(b):
        return None, []
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    st = hdrs[shstrndx] if shstrndx < shnum else None

    def nm(h):
        if not st or st[4] + h[0] >= len(b):
            return "?"
        return b[st[4] + h[0]:b.find(b"\0", st[4] + h[0])].decode("latin-1")

    return shnum, [(nm(h),) + h for h in hdrs]


def short(name):
    """A section name with its kernel part taken out."""
    for p in (".text.", ".nv.info.", ".nv.constant0.", ".nv.shared.", ".nv.local.", ".rel.", ".rela.",
              ".nv.capmerc.text.", ".nv.merc.", ".nv.global.init", ".nv.constant", ".nv_debug", ".nv.callgraph"):
        if name.startswith(p):
            rest = name[len(p):]
            return p + ("*" if rest and not rest[0].isdigit() else rest)
    return name


def cubin_facts(b, sm_entry, t):
    if len(b) < 64 or b[:4] != b"\x7fELF":
        t["cubin: not an ELF"][0] += 1
        return
    osabi, abiv = b[7], b[8]
    e_type, _, e_version = struct.unpack_from("<HHI", b, 16)
    flags, = struct.unpack_from("<I", b, 48)
    sm = (flags >> 8) & 0xff if abiv >= 8 else flags & 0xff
    t[f"e_ident osabi/abiversion: {osabi:#x}/{abiv}"][0] += 1
    t[f"e_version: {e_version} (abi {abiv})"][0] += 1
    if abiv >= 8:
        t[f"e_flags (abi 8) bytes 0,2,3: {flags & 0xff:#04x} {(flags >> 16) & 0xff:#04x} {flags >> 24:#04x}"][0] += 1
    else:
        t[f"e_flags (abi 7) byte1 {(flags >> 8) & 0xff:#04x}, virtual<=sm {((flags >> 16) & 0xff) <= sm}, byte3 {flags >> 24:#04x}"][0] += 1
    shnum, secs = sections(b)
    if not secs:
        t["cubin: no section table"][0] += 1
        return
    names = [s[0] for s in secs]
    has = lambda n: any(x == n for x in names)
    gen = "sm<90" if sm < 90 else ("sm_9x" if sm < 100 else "sm>=100")
    t[f"mislabel: {gen}: .nv.compat present: {has('.nv.compat')}"][0] += 1
    types = {s[2] for s in secs}
    t[f"mislabel: {gen}: REL {9 in types} RELA {4 in types}"][0] += 1
    t[f"mislabel: {gen}: .nv.rel.action {has('.nv.rel.action')}"][0] += 1
    for s in secs:
        name, _, ty, fl, addr, off, size, link, info, align, entsz = s
        sn = short(name)
        # sh_info outside what cudyn allowed: not .text, not symtab, not REL/RELA, not INFO_LINK.
        text = ty == 1 and fl & 4
        if not text and ty not in (2, 4, 9) and not fl & 0x40 and info >= shnum:
            t[f"sh_info >= shnum: {sn} type {ty:#x} flags {fl:#x} info {'0xffffffff' if info == 0xffffffff else 'other'}"][0] += 1
        if ty != SHT_NOBITS and ty != 0 and off + size > len(b):
            t[f"section past the image: {sn} type {ty:#x} size {'0' if size == 0 else '>0'}"][0] += 1
        if ty == 7:  # notes
            rest = b[off:off + size]
            ok = True
            while rest:
                if len(rest) < 12:
                    ok = False
                    break
                nsz, dsz, _ = struct.unpack_from("<III", rest, 0)
                ln = 12 + ((nsz + 3) & ~3) + ((dsz + 3) & ~3)
                if ln > len(rest):
                    ok = False
                    break
                rest = rest[ln:]
            t[f"note {sn} whole records: {ok}"][0] += 1
            if name == ".note.nv.tkinfo" and ok and size >= 12:
                desc = b[off:off + size]
                args = desc[desc.find(b"-arch"):].split(b"\0")[0].decode("latin-1") if b"-arch" in desc else ""
                arch = args.split()[1] if len(args.split()) > 1 else "-"
                wants = f"sm_{sm}"
                t[f"mislabel: tkinfo -arch names the e_flags sm: {arch.rstrip('af') == wants} ({'absent' if arch == '-' else 'present'})"][0] += 1
                if arch != "-" and arch.rstrip("af") != wants:
                    t[f"  tkinfo arch {arch} vs e_flags {wants}"][0] += 1
        if ty == 0x70000000:  # .nv.info
            p, end = off, off + size
            while p + 4 <= end:
                fmt, attr, v = b[p], b[p + 1], struct.unpack_from("<H", b, p + 2)[0]
                ln = v if fmt == 4 else 0
                key = f"nv.info attr {attr:#04x} format {fmt} len {ln if fmt == 4 else '-'}"
                t[key][0] += 1
                if attr == 0x0a and fmt == 4 and ln >= 8 and p + 12 <= end:
                    po, = struct.unpack_from("<H", b, p + 8)
                    t[f"mislabel: PARAM_CBANK offset {po:#x} for {gen} (sm_{sm})"][0] += 1
                p += 4 + ln
        if ty == 0x70000086:  # .nv.compat: records as in .nv.info; do they tile the section?
            p, end = off, off + size
            while p + 4 <= end:
                fmt, attr, v = b[p], b[p + 1], struct.unpack_from("<H", b, p + 2)[0]
                ln = v if fmt == 4 else 0
                t[f"nv.compat attr {attr:#04x} format {fmt} {'len ' + str(ln) if fmt == 4 else 'value ' + str(v)}"][0] += 1
                p += 4 + ln
            t[f"nv.compat records: {'tile the section' if p == end else 'run past its end' if p > end else 'leave bytes over'}"][0] += 1
        if ty == 2 and entsz == 24:  # symbols outside their section
            for k in range(size // 24):
                so = off + 24 * k
                _, info_, other, shndx, value, ssize = struct.unpack_from("<IBBHQQ", b, so)
                if 0 < shndx < len(secs):
                    tgt = secs[shndx]
                    if value + ssize > tgt[6]:
                        t[f"symbol past its section: {short(tgt[0])} type {tgt[2]:#x}"][0] += 1


def one(path):
    t = collections.defaultdict(lambda: [0, ""])
    try:
        data = open(path, "rb").read()
        name = os.path.basename(path)
        if data[:4] == b"\x7fELF":
            cubin_facts(data, None, t)
        else:
            for e in entries(data):
                ext = header_extension(e)
                kind = {1: "ptx", 2: "elf", 8: "lto"}.get(e["kind"], "?")
                if ext:
                    pos = ",".join(f"{i:#x}" for i, _ in ext[:4])
                    t[f"entry header extension nonzero outside name/options: {kind} sm>=100 {e['arch'] >= 100} version {e['version']} at {pos}"][0] += 1
                t[f"entry header size {e['hs']} name {'yes' if e['name'][1] else 'no'} options {'yes' if e['opt_at'] else 'no'}"][0] += 1
                t[f"entry version word: {kind} {e['version']}"][0] += 1
                if e["kind"] == 2:
                    try:
                        cubin_facts(body(e), e["arch"], t)
                    except Exception as x:  # noqa: BLE001
                        t[f"entry body error {type(x).__name__}"][0] += 1
        for k in t:
            t[k][1] = name
    except Exception as x:  # noqa: BLE001
        t[f"file error {type(x).__name__}: {x}"] = [1, path]
    return dict(t)


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    corpus, jobs, limit = args[0], 2, None
    if "--jobs" in args:
        jobs = int(args[args.index("--jobs") + 1])
    if "--limit" in args:
        limit = int(args[args.index("--limit") + 1])
    files = sorted(os.path.join(corpus, f) for f in os.listdir(corpus) if not f.startswith("."))[:limit]
    total = collections.defaultdict(lambda: [0, ""])
    with multiprocessing.Pool(jobs) as pool:
        for t in pool.imap_unordered(one, files, chunksize=64):
            for k, (n, ex) in t.items():
                total[k][0] += n
                if not total[k][1] or len(ex) < len(total[k][1]):
                    total[k][1] = ex
    for k in sorted(total):
        print(f"{total[k][0]:9}  {k}    e.g. {total[k][1]}")


main()
