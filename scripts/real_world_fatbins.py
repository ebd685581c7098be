#!/usr/bin/env python3
"""Fill a folder with real-world fatbins: the `.nv_fatbin` sections of NVIDIA's own libraries in
their pip wheels, one file per fatbin container (magic 0xBA55ED50). NVIDIA's binaries are not
redistributed with cudyn; this script downloads the wheels (pip) and extracts them locally.

  usage: scripts/real_world_fatbins.py OUT [--max-mib N] [WHEEL_SPEC...]

Default wheels: nvJPEG for CUDA 12 (LZ4-compressed entries) and CUDA 13 (zstd), and cuRAND for
CUDA 13. --max-mib bounds the total written (default 48), keeping the corpus small enough to
carry to a GPU machine; containers are taken smallest library first, largest container last.
Used by tests/real_world_fatbins.rs (CUDYN_REAL_FATBINS=OUT) and the GPU corpus load
(scripts/gpu-corpus.sh).
"""
import os, struct, subprocess, sys, tempfile, zipfile

DEFAULT = ["nvidia-nvjpeg-cu12==12.4.0.76", "nvidia-nvjpeg==13.0.1.86", "nvidia-curand==10.4.0.35"]
MAGIC = 0xBA55ED50


def sections(elf):
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    stroff = hdrs[shstrndx][4]
    for h in hdrs:
        name = elf[stroff + h[0]:elf.index(b"\0", stroff + h[0])].decode()
        yield name, h[4], h[5]


def containers(blob):
    off = 0
    while off + 16 <= len(blob):
        magic, ver, hsize, psize = struct.unpack_from("<IHHQ", blob, off)
        if magic != MAGIC:
            off += 8  # padding between containers
            continue
        end = off + hsize + psize
        yield blob[off:end]
        off = (end + 7) & ~7


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    out, specs, cap = args[0], [], 48
    i = 1
    while i < len(args):
        if args[i] == "--max-mib":
            cap = int(args[i + 1]); i += 2
        else:
            specs.append(args[i]); i += 1
    specs = specs or DEFAULT
    os.makedirs(out, exist_ok=True)
    budget = cap << 20
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, spec], check=True)
        found = []
        for whl in sorted(os.listdir(tmp)):
            with zipfile.ZipFile(os.path.join(tmp, whl)) as z:
                for n in z.namelist():
                    if ".so" not in os.path.basename(n):
                        continue
                    elf = z.read(n)
                    for name, off, size in sections(elf) or []:
                        if name == ".nv_fatbin":
                            for j, c in enumerate(containers(elf[off:off + size])):
                                found.append((whl.split("-")[0] + "-" + whl.split("-")[1], os.path.basename(n).split(".so")[0], j, c))
        found.sort(key=lambda f: len(f[3]))
        written = 0
        for pkg, lib, j, c in found:
            if written + len(c) > budget:
                continue
            with open(os.path.join(out, f"{pkg}_{lib}_{j:03d}.fatbin"), "wb") as f:
                f.write(c)
            written += len(c)
        print(f"{len(os.listdir(out))} fatbins, {written >> 20} MiB in {out} (of {len(found)} found)")


main()
