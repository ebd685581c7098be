#!/usr/bin/env bash
# The structured hostile-image campaign through cudyn on the GPU machine: every field of every
# structure of the corpus set to boundary values and bit-flipped, loaded through both APIs, and
# each mutant cudyn accepts then preloaded on device 0 (cudyn_library_preload: its module and
# every kernel's function loaded into the primary context), so that CUDA's whole loader reads it,
# not only what a lazy load reads (MUTANTS_PRELOAD=0: the load alone, as before 2026-12-07).
# The corpus: the interop sm_90 cubin and multi-arch fatbin, a zstd-compressed fatbin, and the
# images named in CAMPAIGN_EXTRA (colon-separated; scripts/campaign_corpus.sh builds nvcc's other
# forms, scripts/real_world_fatbins.py extracts NVIDIA's). cudyn must never crash. A crash is
# recorded (the mutant is written to OUT/crash<N>.bin for a regression test, and what it changes
# is printed: `mutants --label` and the image's file) and the run resumes after it, so one call
# finds several. SHARDS runs that many ranges of the plan side by side.
#   usage: [SHARDS=n] [MUTANTS_COUNT=n] [CAMPAIGN_EXTRA=a:b] [CAMPAIGN_DIR=dir] scripts/gpu-structured.sh OUT [FROM=0] [SECONDS=240] [TO=all]
#   FROM/TO: the mutants [FROM, TO) of the plan (e.g. the part of a range an earlier run's
#   shard did not reach in its time), shared out among the shards.
#   RANGES=lo-hi,lo-hi,...: these ranges of the plan instead of [FROM, TO), e.g. every range
#   the shards of earlier runs left ("time budget spent (last mutant N)": N to the shard's end);
#   their mutants are shared out evenly among the shards. Mutant numbers hold only for the same
#   plan (corpus, fields, and mutants.cpp's families): RANGES_PLAN=N, the plan size the run that
#   left them printed, makes a run over a plan of any other size stop before it starts.
#   MUTANTS_COUNT: 0 (default) = every mutant of the plan; fewer spreads them over every field.
#   CAMPAIGN_DIR: every image in that folder joins the corpus (the real-world campaign images
#   `scripts/real_world_fatbins.py --subset ... --also LIST` writes to OUT/.campaign).
#   MUTANTS_FIELDS=regex and MUTANTS_KINDS=fields,records,multi,bounds,splice,ptx,names (see
#   cpp-tests/mutants.cpp) narrow the plan, e.g. to the fields a change loosened.
# Needs a configured build-gpu (scripts/gpu-suite.sh), or configures one against .prefix.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: gpu-structured.sh OUT [FROM] [SECONDS]}
from=${2:-0}
budget=${3:-240}
upto=${4:-}
shards=${SHARDS:-1}
count=${MUTANTS_COUNT:-0}
mkdir -p "$out"
cuda=${CUDA_PATH:-/usr/local/cuda}
if [ ! -f build-gpu/build.ninja ]; then
  cmake -S . -B build-gpu -G Ninja -DCUDYN_USE_INSTALLED=ON -DCMAKE_PREFIX_PATH="$PWD/.prefix" \
    -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCUDAToolkit_ROOT="$cuda" -DCUDYN_TEST_ARCHS=90 \
    -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null || exit 1
fi
cmake --build build-gpu -j "$(nproc)" >/dev/null || exit 1
"$cuda/bin/nvcc" -fatbin -Xfatbin=-compress-all -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
  -o "$out/compressed.fatbin" cpp-tests/kernels/interop_kernels.cu || exit 1
d=build-gpu/cpp-tests/device
m=build-gpu/cpp-tests/mutants
images=("$d/interop_kernels.sm_90.cubin" "$d/interop_kernels.fatbin")
extra=${CAMPAIGN_EXTRA:-}
if [ -n "${CAMPAIGN_DIR:-}" ]; then
  for f in "$CAMPAIGN_DIR"/*; do [ -f "$f" ] && extra="${extra:+$extra:}$f"; done
fi
export MUTANTS_STRUCTURED=1 MUTANTS_EXTRA="$out/compressed.fatbin${extra:+:$extra}"
total=$("$m" "${images[@]}" "$count" --plan-size) || exit 1
if [ -n "${RANGES_PLAN:-}" ] && [ "$RANGES_PLAN" != "$total" ]; then
  echo "RANGES_PLAN: the ranges are of a plan of $RANGES_PLAN mutants; this plan has $total (its corpus, fields or families changed)" >&2
  exit 2
fi
[ -n "$upto" ] && [ "$upto" -lt "$total" ] && total=$upto
echo "structured campaign: mutants [$from, $total) of the plan, $shards shard(s), ${budget}s"
start=$(date +%s)

# What mutant N changes, and in which image: "image 9 (offsets-sm90.cubin) symbol.st_info".
IFS=: read -r -a corpus <<<"${images[0]}:${images[1]}:$MUTANTS_EXTRA"
label() {
  local l i
  l=$("$m" "${images[@]}" "$count" --label "$1" 2>/dev/null) || { echo "?"; return; }
  l=${l#* }                       # "image 9 symbol.st_info"
  i=$(echo "$l" | awk '{print $2}')
  echo "image $i (${corpus[$i]##*/})${l#image $i}"
}

# One shard: mutants [lo, hi) of each of its ranges ("lo-hi lo-hi ..."), resuming after each
# crash. When the time budget is spent, it prints what it left: "left: N-hi ..." (N being the
# mutant it was on), ready for RANGES.
shard() {
  local s=$1 crashes=0 rc t left lo hi rest
  set -- $2
  : >"$out/run$s.txt"
  while [ $# -gt 0 ]; do
    lo=${1%-*} hi=${1#*-}; shift
    rest="$*"
    left=$((budget - ($(date +%s) - start)))
    if [ "$left" -le 5 ]; then echo "shard $s: time budget spent; left: $lo-$hi $rest"; break; fi
    rm -f "$out/trace$s"
    MUTANTS_FROM=$lo MUTANTS_TO=$hi MUTANTS_TRACE="$out/trace$s" timeout "$left" \
      "$m" "${images[@]}" "$count" >>"$out/run$s.txt" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then echo "shard $s: done to $hi"; continue; fi
    t=$(cat "$out/trace$s" 2>/dev/null) || { tail -20 "$out/run$s.txt"; break; }
    if [ "$rc" -eq 124 ]; then echo "shard $s: time budget spent (last mutant $t); left: $t-$hi $rest"; break; fi
    crashes=$((crashes + 1))
    echo "shard $s: mutant $t crashed the process through cudyn (status $rc): $(label "$t")"
    "$m" "${images[@]}" "$count" --dump "$t" "$out/crash$t.bin"
    set -- "$((t + 1))-$hi" "$@"
  done
  echo "$crashes" >"$out/crashes$s"
}
# The ranges to run, then the shards' shares of them: shard s gets the mutants from s/shards to
# (s+1)/shards of the ranges' total length, as one or more pieces of the ranges.
ranges=${RANGES:-$from-$total}
ranges=${ranges//,/ }
length=0
for r in $ranges; do
  [[ $r =~ ^[0-9]+-[0-9]+$ ]] && [ "${r%-*}" -le "${r#*-}" ] || { echo "RANGES: '$r' is not lo-hi" >&2; exit 2; }
  length=$((length + ${r#*-} - ${r%-*}))
done
[ -n "${RANGES:-}" ] && echo "  ranges: $ranges ($length mutants)"
for ((s = 0; s < shards; s++)); do
  a=$((length * s / shards)) b=$((length * (s + 1) / shards)) at=0 pieces=""
  for r in $ranges; do
    lo=${r%-*} hi=${r#*-} n=$((hi - lo))
    p=$((a > at ? a - at : 0)) q=$((b - at < n ? b - at : n))
    [ "$p" -lt "$q" ] && pieces="$pieces $((lo + p))-$((lo + q))"
    at=$((at + n))
  done
  shard "$s" "$pieces" &
done
wait
crashes=0
for ((s = 0; s < shards; s++)); do
  crashes=$((crashes + $(cat "$out/crashes$s" 2>/dev/null || echo 1)))
  grep -E "structured:|through the|^    [ 0-9]+ CUDYN" "$out/run$s.txt" | head -12
done
echo "structured campaign: $crashes crash(es) through cudyn"
[ "$crashes" -eq 0 ]
