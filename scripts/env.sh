# Source this: puts the project's toolchain (scripts/bootstrap.sh) on PATH and points cudyn's
# build and tests at it. Used by scripts/test.sh and scripts/demo.sh.
_cudyn_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CUDYN_CUDA_ROOT=$("$_cudyn_root/scripts/bootstrap.sh")
export CUDYN_CUDA_ROOT
if [ -d "$_cudyn_root/.toolchain/py/bin" ]; then
  export PATH="$_cudyn_root/.toolchain/py/bin:$PATH"
fi
if [ -f "$_cudyn_root/.toolchain/py/clang/native/libclang.so" ]; then
  export LIBCLANG_PATH="$_cudyn_root/.toolchain/py/clang/native"
fi
# cudyn finds NVRTC, nvJitLink and the runtime in the wheels through PYTHONPATH's
# site-packages, the way it would in a user's virtualenv: no LD_LIBRARY_PATH involved.
if [ -d "$_cudyn_root/.toolchain/py/nvidia" ]; then
  export PYTHONPATH="$_cudyn_root/.toolchain/py${PYTHONPATH:+:$PYTHONPATH}"
fi
unset LD_LIBRARY_PATH
export CUDYN_REQUIRE_CUDA_HEADERS=1
export CUDYN_CACHE_DIR="$_cudyn_root/build/test-cache"
export CMAKE_GENERATOR=Ninja
CUDYN_CMAKE_ARGS=(-DCMAKE_CUDA_COMPILER="$CUDYN_CUDA_ROOT/bin/nvcc" -DCUDAToolkit_ROOT="$CUDYN_CUDA_ROOT")
# Configure the project into build/ with the toolchain above; cmake's output goes to
# build-configure.log, shown only if configuring fails. Used by test.sh, demo.sh, install-prefix.sh.
cudyn_configure() {
  cmake -S "$_cudyn_root" -B "$_cudyn_root/build" "${CUDYN_CMAKE_ARGS[@]}" >"$_cudyn_root/build-configure.log" 2>&1 ||
    { cat "$_cudyn_root/build-configure.log"; return 1; }
}
