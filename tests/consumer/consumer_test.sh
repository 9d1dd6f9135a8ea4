#!/usr/bin/env bash
# Builds every program under examples/ as a consumer outside the tree would, against an installed gradkit, and runs
# each: each must exit 0.
#   consumer_test.sh BUILD_DIR SOURCE_DIR pkg-config   g++ FILE $(pkg-config --cflags --libs gradkit), nothing else
#   consumer_test.sh BUILD_DIR SOURCE_DIR cmake        find_package(gradkit) + target_link_libraries(gradkit::gradkit)
set -euo pipefail
build=$(realpath "$1")
source_dir=$(realpath "$2")
mode=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(dirname "$(find "$work/prefix" -name gradkit.pc -path '*pkgconfig*' | head -1)")/..
export LD_LIBRARY_PATH=$(realpath "$libdir")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

programs=()
case "$mode" in
  pkg-config)
    export PKG_CONFIG_PATH=$libdir/pkgconfig
    flags=$(pkg-config --cflags --libs gradkit)
    for source in "$source_dir"/examples/*.cpp; do
      name=$(basename "$source" .cpp)
      # Word splitting of $flags is intended: it is a command line.
      # shellcheck disable=SC2086
      g++ -o "$work/$name" "$source" $flags
      programs+=("$work/$name")
    done
    ;;
  cmake)
    cmake -S "$source_dir/tests/consumer/cmake" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DEXAMPLES_DIR="$source_dir/examples" >/dev/null
    cmake --build "$work/build" >/dev/null
    for source in "$source_dir"/examples/*.cpp; do
      programs+=("$work/build/$(basename "$source" .cpp)")
    done
    ;;
  *)
    echo "consumer_test.sh: mode must be pkg-config or cmake, given '$mode'" >&2
    exit 2
    ;;
esac

for program in "${programs[@]}"; do
  if ! output=$("$program" 2>&1); then
    echo "FAILED: $(basename "$program") ($mode build) exited non-zero:"
    echo "$output"
    exit 1
  fi
  echo "ok: $(basename "$program") ($mode build)"
done
echo "${#programs[@]} example programs built with $mode against the installed gradkit and run"
