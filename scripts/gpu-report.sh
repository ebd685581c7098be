#!/usr/bin/env bash
# Everything the GPU figures in docs/ come from, in one call on a GPU machine (after
# scripts/install-prefix.sh here), stage by stage; results go to DIR.
#   usage: [STAGES="suite bench ..."] scripts/gpu-report.sh DIR [PREFIX=.prefix]
# Stages (default: all but campaign), in this order:
#   suite     the CMake/ctest suite (scripts/gpu-suite.sh) without hostile.mutants_10000, or
#             only the tests matching SUITE_REGEX (with CUDYN_GPU_TARGETS naming the targets to
#             build, a re-check of a few tests in a fraction of the build time)
#   bench     launch ratios against raw cuLaunchKernelEx/cudaLaunchKernel, loads, per-call costs
#             (cpp-tests/bench/launch_bench.cu); BENCH_ROUNDS (11)
#   corpus    every real-world image in CORPUS (scripts/real_world_fatbins.py --subset fills
#             one; examples/prepare_images.rs adds `.globals`/`.handed`): the same verdict,
#             kernels, module loads, globals and managed variables as raw CUDA, then first-sight
#             and repeated load cost (corpus_load); CORPUS_ROUNDS (5)
#   cost      a first-sight load taken apart (load_cost) over COST_DIR (images with `.handed`)
#   campaign  the structured hostile-image campaign (scripts/gpu-structured.sh) over nvcc's
#             forms and CAMPAIGN_DIR, SHARDS (16) side by side for CAMPAIGN_SECONDS (420);
#             MUTANTS_FIELDS / MUTANTS_KINDS narrow it
#   hostile   10,000 random mutants through cudyn, then raw for comparison (MUTANTS_RAW_SECONDS)
#   plant     libraries planted in the working directory and an empty LD_LIBRARY_PATH entry:
#             cudyn doctor must never run them
#   cache     the compile cache beside jitify2 and cuda.core (cache_compare, cuda_core_cache.py)
#   reference cuda.core's launch row and the chart
#   sanitize  compute-sanitizer over the GPU tests (scripts/gpu-sanitize.sh)
#   rust      the Rust examples, built on a machine with Rust and carried in RUST_BIN
#             (`cargo build --release --examples`, then target/release/examples): vec_add, and
#             kernel_race (safe Rust: a kernel's queries racing its library's unload and reload,
#             RACE_ROUNDS (3000) rounds per query kind)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: gpu-report.sh DIR [PREFIX]}
prefix=${2:-.prefix}
stages=" ${STAGES:-suite bench corpus hostile plant cache reference sanitize rust} "
want() { [[ "$stages" == *" $1 "* ]]; }
mkdir -p "$out"
export CUDA_PATH=${CUDA_PATH:-/usr/local/cuda} CUDYN_REQUIRE_GPU=1
b=build-gpu/cpp-tests
d=$b/device
if want suite; then
  echo "== suite"
  if [ -n "${SUITE_REGEX:-}" ]; then sel=(-R "$SUITE_REGEX"); else sel=(-E '^hostile\.mutants_10000$'); fi
  bash scripts/gpu-suite.sh "$prefix" "${sel[@]}" > "$out/suite.log" 2>&1
  grep -E "tests passed|Failed|\*\*\*|Not Run" "$out/suite.log" | tail -25
elif [ ! -f build-gpu/build.ninja ]; then
  # Configure and build as the suite does, without running it.
  bash scripts/gpu-suite.sh "$prefix" -R '^$' > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
fi
export LD_LIBRARY_PATH="$CUDA_PATH/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if want bench; then
  echo "== benchmark"
  "$b/launch_bench" "$d/interop_kernels.fatbin" "$out/bench.json" "${BENCH_ROUNDS:-11}" > "$out/bench.txt" 2>&1
  cat "$out/bench.txt"
fi
if want corpus && [ -n "${CORPUS:-}" ]; then
  echo "== real-world images"
  # An image that crashes the process (CUDA itself dies on some: see corpus_load.cu) is left
  # out and the run starts again; then each such image is examined alone, raw and through cudyn,
  # each in a process of its own.
  : > "$out/corpus-crashed"
  for try in 1 2 3 4 5 6 7 8; do
    CORPUS_PROGRESS="$out/corpus-progress" CORPUS_SKIP="$out/corpus-crashed" \
      "$b/corpus_load" "$CORPUS" "${CORPUS_ROUNDS:-5}" > "$out/corpus.txt" 2>&1
    rc=$?
    echo "corpus_load: exit $rc"
    [ $rc -gt 128 ] || break
    cat "$out/corpus-progress" >> "$out/corpus-crashed"; echo >> "$out/corpus-crashed"
    echo "crashed on $(cat "$out/corpus-progress") (signal $((rc - 128))); again without it"
  done
  while read -r name; do
    [ -n "$name" ] || continue
    one=$(mktemp -d); cp "$CORPUS/$name"* "$one/"
    for side in raw cudyn; do
      # The output goes beside the folder, not in it: corpus_load would take it for an image.
      CORPUS_ONLY=$side "$b/corpus_load" "$one" > "$one.$side.txt" 2>&1
      echo "  $side alone: exit $? $(tail -2 "$one.$side.txt" | cut -c1-400 | paste -sd' ')"
    done
    rm -rf "$one" "$one.raw.txt" "$one.cudyn.txt"
  done < "$out/corpus-crashed"
  grep -E "^MISMATCH|^verdicts|^layouts|first sight, all|worst first-sight|^repeated" "$out/corpus.txt" | head -40
fi
if want cost && [ -n "${COST_DIR:-}" ]; then
  echo "== first-sight load taken apart"
  "$b/load_cost" "$COST_DIR" 7 > "$out/load_cost.txt" 2>&1
  cat "$out/load_cost.txt"
fi
if want campaign; then
  echo "== structured campaign"
  bash scripts/campaign_corpus.sh "$out/forms" > "$out/forms.log" 2>&1 || { tail -20 "$out/forms.log"; }
  SHARDS=${SHARDS:-16} CAMPAIGN_EXTRA=$(ls "$out"/forms/* 2>/dev/null | paste -sd:) \
    bash scripts/gpu-structured.sh "$out/campaign" 0 "${CAMPAIGN_SECONDS:-420}" > "$out/campaign.log" 2>&1
  echo "gpu-structured: exit $?"
  tail -25 "$out/campaign.log"
fi
if want hostile; then
  echo "== hostile images"
  timeout 300 "$b/mutants" "$d/interop_kernels.sm_90.cubin" "$d/interop_kernels.fatbin" 10000 > "$out/mutants.txt" 2>&1
  echo "cudyn pass: exit $?"; tail -8 "$out/mutants.txt"
  export MUTANTS_RAW_SECONDS=${MUTANTS_RAW_SECONDS:-200}
  timeout $((MUTANTS_RAW_SECONDS + 60)) "$b/mutants" "$d/interop_kernels.sm_90.cubin" "$d/interop_kernels.fatbin" 10000 --raw-only > "$out/mutants-raw.txt" 2>&1
  echo "raw pass: exit $?"; tail -12 "$out/mutants-raw.txt"
fi
if want plant; then
  echo "== planted libraries"
  plant=$(mktemp -d)
  printf '__attribute__((constructor)) static void c(void){ __builtin_trap(); }\n' > "$plant/p.c"
  for n in libcuda.so.1 libnvrtc.so.13 libcudart.so.13 libnvJitLink.so.13 libdl.so.2 libm.so.6 librt.so.1 libpthread.so.0 libstdc++.so.6; do
    gcc -shared -fPIC -o "$plant/$n" "$plant/p.c" -Wl,-soname,$n
  done
  (cd "$plant" && LD_LIBRARY_PATH=":$CUDA_PATH/lib64" "$OLDPWD/$prefix/bin/cudyn" doctor; echo "doctor with planted libraries: exit $? (0: none ran)")
  gcc -shared -fPIC -o "$plant/libnvidia-ptxjitcompiler.so.1" "$plant/p.c"
  (cd "$plant" && LD_LIBRARY_PATH=":$CUDA_PATH/lib64" "$OLDPWD/$prefix/bin/cudyn" doctor; echo "doctor with a planted PTX JIT compiler too: exit $? (1: the driver refused, nothing ran)")
  rm -rf "$plant"
fi
if want cache; then
  echo "== compile cache"
  CUDYN_CACHE_DIR="$out/cache-compare" "$b/cache_compare" 7 > "$out/cache_compare.txt" 2>&1; cat "$out/cache_compare.txt"
  python3 benches/cuda_core_cache.py 5 > "$out/cuda_core_cache.txt" 2>&1; tail -6 "$out/cuda_core_cache.txt"
fi
if want reference; then
  python3 benches/cuda_core_reference.py "$out/cuda_core.json" > "$out/cuda_core.txt" 2>&1; cat "$out/cuda_core.txt"
  [ -f "$out/bench.json" ] && python3 benches/plot.py "$out/bench.json" "$out/cuda_core.json" > "$out/launch-overhead.svg" 2>/dev/null
fi
if want sanitize; then
  echo "== compute-sanitizer"
  bash scripts/gpu-sanitize.sh build-gpu > "$out/sanitize.txt" 2>&1
  echo "sanitizers: exit $?"; grep -cE " rc=0 " "$out/sanitize.txt"
fi
if want rust && [ -n "${RUST_BIN:-}" ]; then
  echo "== Rust examples"
  "$RUST_BIN/vec_add" > "$out/vec_add.txt" 2>&1
  echo "vec_add: exit $?"; cat "$out/vec_add.txt"
  "$RUST_BIN/kernel_race" "${RACE_ROUNDS:-3000}" > "$out/kernel_race.txt" 2>&1
  echo "kernel_race: exit $?"; cat "$out/kernel_race.txt"
fi
