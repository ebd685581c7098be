#!/usr/bin/env python3
"""Check that exported C functions of a built libcudyn call nothing but what is allowed.

The launch entry points run their common case before the panic guard (why: docs/design-notes.md,
"The launch fast path runs before the panic guard"):
a panic there would abort the process, and a lock, an allocation or a thread-local would slow
every launch. So the machine code of each function named here may call only: the panic guard
(which runs everything else), CUDA through a function pointer held in a register, and the
landing pad Rust adds to every extern "C" function (`panic_cannot_unwind`, reached only if a
callee unwinds, which the guard never does). A call to another function of cudyn is
followed, and that function is held to the same rule. Any other call fails the check, named.

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
    # Function addresses -> (name, size), local symbols included.
    funcs = {}
    for line in run("nm", "-C", "-S", lib).splitlines():
        m = re.match(r"([0-9a-f]+) ([0-9a-f]+) [tTwW] (.*)$", line)
        if m:
            funcs[int(m.group(1), 16)] = (m.group(3), int(m.group(2), 16))
    by_name = {name: (addr, size) for addr, (name, size) in funcs.items()}
    # GOT slots -> what they hold (a relative relocation to a local function, or a symbol).
    got = {}
    for line in run("objdump", "-R", "-C", lib).splitlines():
        m = re.match(r"([0-9a-f]+)\s+(R_X86_64_\w+)\s+(.*)$", line)
        if not m:
            continue
        off, value = int(m.group(1), 16), m.group(3).strip()
        rel = re.match(r"\*ABS\*\+0x([0-9a-f]+)", value)
        got[off] = funcs.get(int(rel.group(1), 16), (value, 0))[0] if rel else value

    def calls_of(name):
        """(instruction count, [callee names]) of function `name`; None if it is not there."""
        if name not in by_name:
            return None
        addr, size = by_name[name]
        body = run("objdump", "-d", "-C", "--no-show-raw-insn", f"--start-address={addr:#x}",
                   f"--stop-address={addr + size:#x}", lib)
        insns = [l for l in body.splitlines() if re.match(r"\s+[0-9a-f]+:\s", l)]
        calls = []
        for l in insns:
            m = re.search(r"\s(call|jmp)\s+(.*)$", l)
            if not m:
                continue
            kind, target = m.groups()
            if re.match(r"\*%\w+$", target):
                calls.append("(a function pointer in a register: CUDA)")
            elif target.startswith("*") and "#" in target:
                slot = int(target.split("#")[1].split()[0], 16)
                calls.append(got.get(slot, f"GOT slot {slot:#x}"))
            elif kind == "call" or not re.match(r"[0-9a-f]+ <" + re.escape(name) + r"(\+0x[0-9a-f]+)?>", target):
                # A call, or a jump out of the function (a tail call).
                dest = int(target.split()[0], 16) if re.match(r"[0-9a-f]+ ", target) else None
                calls.append(funcs[dest][0] if dest in funcs else target)
        return len(insns), calls

    bad = 0
    todo, seen = list(symbols), set()
    while todo:
        sym = todo.pop(0)
        if sym in seen:
            continue
        seen.add(sym)
        found = calls_of(sym)
        if found is None:
            print(f"FAIL {sym}: not found in {lib}")
            bad += 1
            continue
        count, calls = found
        print(f"{sym}: {count} instructions; calls: {', '.join(sorted(set(calls))) or 'none'}")
        for c in calls:
            if c.startswith("(") or any(c.startswith(a) for a in ALLOWED):
                continue
            if c.startswith("cudyn::") and c in by_name:
                todo.append(c)  # ours: held to the same rule
                continue
            print(f"FAIL {sym} calls {c}")
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
