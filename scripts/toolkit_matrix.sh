#!/usr/bin/env bash
# Other toolkits' output through cudyn's checks: the ptxas and fatbinary of other CUDA releases
# (from NVIDIA's nvcc wheels: by default CUDA 13.5 and 12.9) over the test kernels' PTX (from
# the project's nvcc), for every architecture each ptxas knows and the options that change a
# cubin's layout (-O0, -lineinfo, -c, -g, -ewp, -pic, -maxrregcount, -sanitize=memcheck,
# -preserve-relocs, ...), then every fatbinary compression mode and --concat. Prints what cudyn
# refuses (`cudyn inspect`), and runs tests/concatenated_entries.rs against the newer
# fatbinary (CUDYN_FATBINARY_CONCAT). CPU only; NVIDIA's binaries stay in OUT.
#   usage: scripts/toolkit_matrix.sh OUT [WHEEL_SPEC...]
#   (default: nvidia-cuda-nvcc==13.5.37 nvidia-cuda-nvcc-cu12==12.9.86; needs pip and network,
#   or the wheels already in OUT/wheels)
set -uo pipefail
shopt -s nullglob
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh
out=$(mkdir -p "${1:?usage: toolkit_matrix.sh OUT [WHEEL_SPEC...]}" && cd "$1" && pwd)
shift
specs=("$@")
[ ${#specs[@]} -eq 0 ] && specs=(nvidia-cuda-nvcc==13.5.37 nvidia-cuda-nvcc-cu12==12.9.86)
mkdir -p "$out/wheels" "$out/tools" "$out/ptx" "$out/cubins" "$out/fatbins"
for s in "${specs[@]}"; do
  ls "$out/wheels" | grep -qi "$(echo "${s%%==*}" | tr - _)-${s##*==}-" ||
    pip download --no-deps --only-binary=:all: -q -d "$out/wheels" "$s" || { echo "cannot download $s"; exit 1; }
done
for w in "$out"/wheels/*.whl; do
  d="$out/tools/$(basename "$w" .whl)"
  [ -d "$d" ] || unzip -q -o "$w" -d "$d" || exit 1
done
cargo build --release -q -p cudyn-cli || exit 1
cudyn=target/release/cudyn
# PTX: the test kernels for compute_90 (and -G, -rdc, 'a' targets), and two for compute_75.
nv="$CUDYN_CUDA_ROOT/bin/nvcc"
for k in interop_kernels surface_kernels offsets_kernels; do
  "$nv" -ptx -arch=compute_90 -o "$out/ptx/$k.90.ptx" "cpp-tests/kernels/$k.cu" || exit 1
  "$nv" -ptx -G -arch=compute_90 -o "$out/ptx/$k.90G.ptx" "cpp-tests/kernels/$k.cu" || exit 1
  "$nv" -ptx -arch=compute_90a -o "$out/ptx/$k.90a.ptx" "cpp-tests/kernels/$k.cu" || exit 1
done
"$nv" -ptx -rdc=true -arch=compute_90 -o "$out/ptx/interop_kernels.90rdc.ptx" cpp-tests/kernels/interop_kernels.cu || exit 1
for k in handles_two peers_kernels; do
  "$nv" -ptx -arch=compute_75 -o "$out/ptx/$k.75.ptx" "cpp-tests/kernels/$k.cu" || exit 1
done
built=0 notbuilt=0
for ptxas in "$out"/tools/*/nvidia/*/bin/ptxas; do
  rel=$("$ptxas" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  isa=$( [ "${rel%%.*}" -ge 13 ] && echo 9.0 || echo 8.8 )  # the PTX ISA that ptxas reads
  # Every SASS target it knows (--list-arch, CUDA 13.1 on; before, CUDA 12.9's list).
  archs=$("$ptxas" --list-arch 2>/dev/null | grep -E '^[0-9]+$')
  [ -n "$archs" ] || archs="50 52 53 60 61 62 70 72 75 80 86 87 89 90 100 101 103 120 121"
  for p in "$out"/ptx/*.ptx; do
    src="$out/ptx/$(basename "$p" .ptx).isa$isa.ptx"
    [[ "$p" == *.isa* ]] && continue
    sed "s/^\.version 9\.0/.version $isa/" "$p" > "$src"
    for a in $archs; do
      for o in "" -O0 -lineinfo -c -ewp -pic=true -maxrregcount=32 -sanitize=memcheck -preserve-relocs -g; do
        [ "$o" = -g ] && [[ "$p" != *G.ptx ]] && continue
        c="$out/cubins/$rel.$(basename "$p" .ptx).sm_$a${o//[=-]/}.cubin"
        if "$ptxas" -arch="sm_$a" $o -o "$c" "$src" 2>/dev/null; then built=$((built + 1)); else notbuilt=$((notbuilt + 1)); fi
      done
    done
  done
done
echo "ptxas: $built cubins built ($notbuilt combinations a ptxas refused: PTX for another target)"
refused=0 accepted=0
for c in "$out"/cubins/*.cubin; do
  if "$cudyn" inspect "$c" > "$out/inspect.txt" 2>&1; then accepted=$((accepted + 1)); else
    refused=$((refused + 1)); echo "refused: $(basename "$c"): $(grep -m1 verdict "$out/inspect.txt")"; fi
done
echo "cubins: $accepted accepted, $refused refused"
# fatbinary: every compression mode, and --concat where it exists, over the newest ptxas's
# cubins of one kernel.
newest=$(ls "$out"/cubins | sed -n 's/^\([0-9.]*\)\.interop_kernels\.90\.sm_90\.cubin$/\1/p' | sort -V | tail -1)
for fb in "$out"/tools/*/nvidia/*/bin/fatbinary "$CUDYN_CUDA_ROOT/bin/fatbinary"; do
  [ -x "$fb" ] || continue
  rel=$("$fb" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  c="$out/cubins/$newest.interop_kernels.90"
  [ -n "$newest" ] && [ -f "$c.sm_120.cubin" ] || continue
  imgs=(--image3=kind=elf,sm=90,file=$c.sm_90.cubin --image3=kind=elf,sm=100,file=$c.sm_100.cubin
        --image3=kind=elf,sm=120,file=$c.sm_120.cubin --image3=kind=ptx,sm=90,file=$out/ptx/interop_kernels.90.ptx)
  for opts in "" -compress-all "-compress-all -compress-mode=size" "-compress-all -compress-mode=speed" \
    "-compress-all -compress-mode=balance" -compress-mode=none -g "-concat -compress-all" \
    "-concat -compress-all -compress-mode=speed" "-concat -compress-all -compress-mode=size"; do
    f="$out/fatbins/$rel${opts//[ =-]/}.fatbin"
    "$fb" -64 --create="$f" $opts "${imgs[@]}" 2>/dev/null || continue  # --concat: 13.5 on
    if "$cudyn" inspect "$f" > "$out/inspect.txt" 2>&1; then accepted=$((accepted + 1)); echo "fatbinary $rel [$opts]: accepted";
    else refused=$((refused + 1)); echo "fatbinary $rel [$opts]: REFUSED: $(grep -m1 verdict "$out/inspect.txt")"; fi
  done
  if "$fb" --help | grep -q -- --concat; then
    CUDYN_FATBINARY_CONCAT="$fb" cargo test -q --test concatenated_entries 2>&1 | grep -E "test result|FAILED|panicked"
  fi
done
echo "total: $accepted accepted, $refused refused"
