#!/usr/bin/env bash
# The repaired wheel works without the system's libraries. Installs dist/gradkit-*manylinux*.whl (./run.sh wheel)
# with pytest into a fresh venv, then:
#   1. `ldd` of every shared object the wheel installed resolves each dependency inside the venv or to a library that
#      the manylinux policy lets a wheel take from the system (glibc's, libstdc++, libgcc_s);
#   2. in a private mount namespace, with Debian's copies of what the unrepaired build links (Highway, oneDNN,
#      OpenCL, libgomp) replaced by an empty file, the package's Python tests run against the installed gradkit
#      (GRADKIT_PACKAGE=installed, tests/python/gradkit_package.py). Torch comes from the venv of ./run.sh torch-venv
#      through a .pth line (a second 5 GB install would cost CI minutes); PyPI's torch vendors its own libraries.
# Exit 77 (skipped, with the reason) when the namespace cannot be made or the torch venv is missing, after step 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)

shopt -s nullglob
wheels=("$root"/dist/gradkit-*manylinux*.whl)
all_wheels=("$root"/dist/*.whl)
if [[ ${#wheels[@]} -ne 1 || ${#all_wheels[@]} -ne 1 ]]; then
  echo "check_wheel: expected one wheel, a manylinux one, in dist/ (./run.sh wheel); found: ${all_wheels[*]:-none}" >&2
  exit 1
fi
wheel=${wheels[0]}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv "$work/venv"  # the interpreter the wheel was built for (./run.sh wheel)
python=$work/venv/bin/python
"$python" -m pip install --quiet "$wheel" pytest
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

# 1. Every dependency of every shared object under site-packages/gradkit* is the venv's or the system's allowed set.
allowed='^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1|ld-linux-x86-64\.so\.2|linux-vdso\.so\.1)$'
objects=$(find "$site"/gradkit* -name '*.so*' -type f)
[[ -n $objects ]] || { echo "check_wheel: the wheel installed no shared object" >&2; exit 1; }
bad=0
for object in $objects; do
  while read -r name _ path _; do
    if [[ $path == "not" ]]; then
      echo "check_wheel: ${object#"$site"/} needs $name, which is not found" >&2
      bad=1
    elif [[ $path != "$site"/* && ! $name =~ $allowed ]]; then
      echo "check_wheel: ${object#"$site"/} takes $name from the system ($path)" >&2
      bad=1
    fi
  done < <(ldd "$object" | grep '=>')
done
((bad == 0)) || exit 1
echo "check_wheel: $(basename "$wheel"): $(wc -w <<<"$objects") shared objects, every dependency vendored or allowed"

# 2. The Python tests with the system copies hidden.
torch_venv=${GRADKIT_TORCH_VENV:-$HOME/.cache/gradkit/torch-venv}
torch_site=$("$torch_venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null) ||
  { echo "check_wheel: skipped the tests: no torch venv at $torch_venv (./run.sh torch-venv)"; exit 77; }
echo "$torch_site" >"$site/zz_torch_venv.pth"  # after the venv's own packages on sys.path
hidden=$(ls /usr/lib/x86_64-linux-gnu/lib{hwy,hwy_contrib,dnnl,OpenCL,gomp}.so* 2>/dev/null || true)
[[ $(id -u) -eq 0 ]] && unshare_args=(-m) || unshare_args=(-Ur -m)
if ! unshare "${unshare_args[@]}" --propagation private true 2>/dev/null; then
  echo "check_wheel: skipped the tests: cannot make a mount namespace here (unshare ${unshare_args[*]})"
  exit 77
fi
tests=(test_gradkit_module.py test_python_edges.py test_nn.py test_flash_attention_torch.py
       test_flash_attention_fp8.py test_flash_attention_seed_cases.py test_shape_models.py
       current_torch/test_torch_library.py)
cd "$root/tests/python"
exec unshare "${unshare_args[@]}" --propagation private env HIDDEN="$hidden" PYTHON="$python" bash -euo pipefail -c '
  for library in $HIDDEN; do mount --bind /dev/null "$(readlink -f "$library")"; done
  # The hiding works: the system copy of Highway no longer loads.
  if "$PYTHON" -c "import ctypes; ctypes.CDLL(\"libhwy.so.1\")" 2>/dev/null; then
    echo "check_wheel: libhwy.so.1 still loads from the system; the test would prove nothing" >&2
    exit 1
  fi
  echo "check_wheel: hidden from the loader: $(echo $HIDDEN | wc -w) files (libhwy, libdnnl, libOpenCL, libgomp)"
  GRADKIT_PACKAGE=installed exec "$PYTHON" -m pytest -q -rs -p no:cacheprovider "$@"
' check_wheel "${tests[@]}"
