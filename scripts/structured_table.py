#!/usr/bin/env python3
"""Per-field table of a structured campaign: reads the output of
`MUTANTS_STRUCTURED=1 mutants <cubin> <fatbin> 0 --validate-only` (or a GPU run) on stdin and
prints, per structure and field (all images, plain and LZ4-wrapped, bit flips and boundary
values together), how many mutants there were, how many cudyn refused, and how many it passed on
to CUDA — on the GPU those are the ones CUDA's loader read through cudyn. Mutations that are not
one field (records relabelled, several fields at once, truncation and extension, spliced
entries, PTX: cpp-tests/mutants.cpp) are rows of their own, their label in brackets.
  usage: ... | scripts/structured_table.py > table.md
"""
import collections
import re
import sys

tot, refused = collections.Counter(), collections.Counter()
for line in sys.stdin:
    m = re.match(r"\s+image \d+ (.*?)\s{2,}(CUDYN.*)$", line)
    if not m:
        continue
    label, rest = m.groups()
    label = label.replace("[lz4-wrapped] ", "").replace(" (bit flip)", "")
    label = re.sub(r" \((?:ptx )?sm_\d+\)", "", label)
    label = re.sub(r"entry (?:ptx )?sm_\d+ cubin ", "entry cubin: ", label)
    for status, n in re.findall(r"(CUDYN_\w+) (\d+)", rest):
        tot[label] += int(n)
        if status == "CUDYN_ERROR_INVALID_IMAGE":
            refused[label] += int(n)
print("| structure.field | mutants (each through both APIs) | refused by cudyn | passed to CUDA |")
print("|---|---:|---:|---:|")
for k in sorted(tot):
    print(f"| {k} | {tot[k] // 2:,} | {refused[k] // 2:,} | {(tot[k] - refused[k]) // 2:,} |")
print(f"| **all** | {sum(tot.values()) // 2:,} | {sum(refused.values()) // 2:,} | {(sum(tot.values()) - sum(refused.values())) // 2:,} |")
