#!/usr/bin/env python3
"""Check that exported C functions of a built libcudyn call nothing but what is allowed.

The launch entry points run their common case before the panic guard (src/capi/launch.rs):
a panic there would abort the process, and a lock, an allocation or a thread-local would slow
every launch. So the machine code of each function named here may call only: the panic guard
(which runs everything else), CUDA through a function pointer held in a register, and the
landing pad Rust adds to every extern "C" function (`panic_cannot_unwind`, reached only if a
callee unwinds, which the guard never does). Any other call fails the check, named.

    usage: check_no_panic.py LIB SYMBOL...   (x86-64 ELF; needs binutils' objdump and nm)
"""
import re
import subprocess
import sys

ALLOWED = ("cudyn::capi::guard", "core::panicking::panic_cannot_unwind")


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    lib, symbols = sys.argv[1], sys.argv[2:]
    # Function addresses -> names, local symbols included.
    names = {}
    for line in run("nm", "-C", lib).splitlines():
        m = re.match(r"([0-9a-f]+) [tTwW] (.*)$", line)
        if m:
            names[int(m.group(1), 16)] = m.group(2)
    # GOT slots -> what they hold (a relative relocation to a local function, or a symbol).
    got = {}
    for line in run("objdump", "-R", "-C", lib).splitlines():
        m = re.match(r"([0-9a-f]+)\s+(R_X86_64_\w+)\s+(.*)$", line)
        if not m:
            continue
        off, kind, value = int(m.group(1), 16), m.group(2), m.group(3).strip()
        rel = re.match(r"\*ABS\*\+0x([0-9a-f]+)", value)
        got[off] = names.get(int(rel.group(1), 16), value) if rel else value
    bad = 0
    for sym in symbols:
        body = run("objdump", "-d", "-C", "--no-show-raw-insn", f"--disassemble={sym}", lib)
        insns = [l for l in body.splitlines() if re.match(r"\s+[0-9a-f]+:\s", l)]
        if not insns:
            print(f"FAIL {sym}: not found in {lib}")
            bad += 1
            continue
        calls = []
        for l in insns:
            m = re.search(r"\s(call|jmp)\s+(.*)$", l)
            if not m or (m.group(1) == "jmp" and "<" in m.group(2) and sym in m.group(2)):
                continue  # not a call, or a jump within the function
            target = m.group(2)
            if m.group(1) == "jmp" and not target.startswith("*"):
                # A tail call leaves the function: it must be allowed like a call.
                inner = re.search(r"<([^>+]+)>", target)
                if inner and inner.group(1) == sym:
                    continue
            if re.match(r"\*%\w+$", target):
                calls.append("(a function pointer in a register: CUDA)")
            elif target.startswith("*") and "#" in target:
                slot = int(target.split("#")[1].split()[0], 16)
                calls.append(got.get(slot, f"GOT slot {slot:#x}"))
            else:
                inner = re.search(r"<([^>]+)>", target)
                calls.append(inner.group(1) if inner else target)
        wrong = [c for c in calls if not c.startswith("(") and not any(c.startswith(a) for a in ALLOWED)]
        print(f"{sym}: {len(insns)} instructions; calls: {', '.join(sorted(set(calls))) or 'none'}")
        for c in wrong:
            print(f"FAIL {sym} calls {c}")
        bad += len(wrong)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
