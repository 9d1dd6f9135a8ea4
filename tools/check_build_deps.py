#!/usr/bin/python3
"""Fail when the build or the tests read a file whose Debian package run.sh does not install.

CI reuses the developer's machine, so a package installed there by hand (once: the OpenCL headers that
Debian's oneDNN CMake config needs) keeps CI green while a fresh machine fails. This check finds every
file the configure, the build and the Python tests read from outside the source and build trees, asks
dpkg which package owns it, and fails unless that package is in run.sh's list, pulled in by one of them
(recursive Depends / Pre-Depends), or part of every Debian system (Essential, Priority required).

Where the files come from:
  configure  a fresh CMake configure of a scratch build dir, run under strace (every file it opened,
             stat'ed or executed, find_path/find_library probes and try_compile included)
  cache      FILEPATH entries of each build dir's CMakeCache.txt (found libraries and programs)
  ninja      absolute file paths in build.ninja (link inputs, imported targets' files, CMake inputs)
  deps       ninja's dependency log (every header the compiler read)
  import     the modules the pytest run imported (tests/python/conftest.py writes them)

Usage: tools/check_build_deps.py --build build [--build build-sanitize] [--imports FILE]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Machine state rather than build input: owned by no package on any Debian system.
IGNORED_PREFIXES = ("/proc/", "/sys/", "/dev/", "/run/", "/tmp/", "/var/", "/etc/")
# Read when present, not needed: gettext's locale.alias and message catalogs (package `locales` and others);
# setuptools' start-up hook, which its .pth file imports in every Python process wherever setuptools is.
OPTIONAL_PREFIXES = ("/usr/share/locale/", "/usr/lib/python3/dist-packages/_distutils_hack/")


# ---------------------------------------------------------------- Debian package graph


def parse_alternatives(field):
    """'a (>= 1) | b, c:any' -> [['a', 'b'], ['c']]"""
    groups = []
    for group in field.split(","):
        names = [re.sub(r"[\s(\[<].*$", "", alt.strip()).split(":")[0] for alt in group.split("|")]
        names = [n for n in names if n]
        if names:
            groups.append(names)
    return groups


def parse_status(text):
    """dpkg-query rows 'pkg<TAB>essential<TAB>priority<TAB>depends<TAB>predepends<TAB>provides' -> dict."""
    packages = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) != 6:
            continue
        name, essential, priority, depends, predepends, provides = fields
        packages[name] = {
            "base": essential == "yes" or priority == "required",
            "depends": parse_alternatives(depends) + parse_alternatives(predepends),
            "provides": [group[0] for group in parse_alternatives(provides)],
        }
    return packages


def installed_packages():
    fmt = "${Package}\\t${Essential}\\t${Priority}\\t${Depends}\\t${Pre-Depends}\\t${Provides}\\t${db:Status-Abbrev}\\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], check=True, capture_output=True, text=True).stdout
    rows = [line.rsplit("\t", 1)[0] for line in out.splitlines() if line.rsplit("\t", 1)[-1].startswith("ii")]
    return parse_status("\n".join(rows))


def closure(roots, packages):
    """Installed packages that apt pulls in for `roots`: recursive Depends and Pre-Depends. Of an
    alternative 'a | b', the first one that is installed (or provided by an installed package) counts."""
    providers = defaultdict(list)
    for name, info in packages.items():
        for virtual in info["provides"]:
            providers[virtual].append(name)

    def resolve(name):
        if name in packages:
            return [name]
        return providers.get(name, [])

    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        for real in resolve(name):
            if real in seen:
                continue
            seen.add(real)
            for group in packages[real]["depends"]:
                chosen = next((r for alt in group for r in [resolve(alt)] if r), [])
                todo.extend(chosen)
    return seen


def run_sh_packages():
    out = subprocess.run([os.path.join(ROOT, "run.sh"), "packages"], check=True, capture_output=True, text=True)
    return out.stdout.split()


# ---------------------------------------------------------------- files read


def strace_paths(text):
    """Absolute paths of successful file syscalls in `strace -f` output."""
    paths = set()
    for line in text.splitlines():
        if " = -1 " in line or "<unfinished" in line:
            continue
        for path in re.findall(r'"(/[^"]*)"', line):
            paths.add(path)
    return paths


def configure_probe(build_dir):
    """Fresh configure of a scratch dir with the build dir's options, under strace."""
    options = []
    with open(os.path.join(build_dir, "CMakeCache.txt")) as cache:
        for line in cache:
            match = re.match(r"^(GRADKIT_\w+|CMAKE_BUILD_TYPE):\w+=(.*)$", line.strip())
            if match:
                options.append(f"-D{match.group(1)}={match.group(2)}")
    with tempfile.TemporaryDirectory(prefix="gradkit-deps-") as scratch:
        log = os.path.join(scratch, "configure.strace")
        command = ["strace", "-f", "-qq", "-e", "trace=%file,execve", "-o", log, "cmake", "-S", ROOT, "-B",
                   os.path.join(scratch, "build"), "-G", "Ninja", *options]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"check_build_deps: the probe configure failed:\n{result.stdout}{result.stderr}")
        with open(log) as f:
            return strace_paths(f.read())


def cache_paths(build_dir):
    paths = set()
    with open(os.path.join(build_dir, "CMakeCache.txt")) as cache:
        for line in cache:
            match = re.match(r"^[\w.+-]+:FILEPATH=(/.*)$", line.strip())
            if match:
                paths.add(match.group(1))
    return paths


def ninja_file_paths(build_dir):
    with open(os.path.join(build_dir, "build.ninja")) as f:
        text = f.read()
    return set(re.findall(r"(?<![\w./-])(/[\w./+-]+)", text))


def ninja_deps_paths(build_dir):
    out = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], check=True, capture_output=True, text=True)
    return {line.strip() for line in out.stdout.splitlines() if line.startswith(" ") and line.strip().startswith("/")}


def import_paths(log):
    if not os.path.exists(log):
        sys.exit(f"check_build_deps: {log} is missing: run the pytest test (ctest -R '^pytest$') first")
    with open(log) as f:
        return {line.strip() for line in f if line.strip().startswith("/")}


def external_files(paths, inside):
    """Regular files outside the source/build trees and outside machine state."""
    kept = set()
    for path in paths:
        path = os.path.normpath(path)
        if path.startswith(IGNORED_PREFIXES + OPTIONAL_PREFIXES) or any(path == d or path.startswith(d + "/") for d in inside):
            continue
        if os.path.isfile(path):
            kept.add(path)
    return kept


# ---------------------------------------------------------------- ownership


def path_variants(path):
    """Names under which dpkg may record `path`, most specific first: the path as read, then (merged /usr)
    with /usr added or dropped; then the same for the file a symlink resolves to. The link's own owner
    wins: libOpenCL.so (the -dev package) must not pass as libOpenCL.so.1 (the runtime package)."""

    def with_usr_toggled(p):
        for short in ("/lib", "/lib64", "/bin", "/sbin"):
            if p.startswith("/usr" + short + "/"):
                return [p, p[4:]]
            if p.startswith(short + "/"):
                return [p, "/usr" + p]
        return [p]

    return [with_usr_toggled(path), with_usr_toggled(os.path.realpath(path))]


def dpkg_owners(paths):
    """path -> set of owning packages, via `dpkg-query -S` (literal paths, in batches)."""
    owners = defaultdict(set)
    paths = sorted(paths)
    for start in range(0, len(paths), 500):
        batch = [p for p in paths[start:start + 500] if not re.search(r"[*?\[\]\\]", p)]
        out = subprocess.run(["dpkg-query", "-S", *batch], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("diversion "):
                continue
            names, _, path = line.partition(": ")
            for name in names.split(","):
                owners[path].add(name.strip().split(":")[0])
    return owners


def owners_of(files):
    variants = {f: path_variants(f) for f in files}
    table = dpkg_owners({v for tiers in variants.values() for tier in tiers for v in tier})
    owners = {}
    for f, tiers in variants.items():
        owned = [set().union(*(table.get(v, set()) for v in tier)) for tier in tiers]
        owners[f] = next((o for o in owned if o), set())
    return owners


def check(files_by_source, listed, packages):
    """Returns (problems, unowned): problems maps package -> [(file, source)]."""
    installed_by_run_sh = closure(listed, packages) | {n for n, info in packages.items() if info["base"]}
    files = {f for fs in files_by_source.values() for f in fs}
    owners = owners_of(files)
    problems, unowned = defaultdict(list), []
    for source, source_files in files_by_source.items():
        for f in sorted(source_files):
            if not owners[f]:
                unowned.append((f, source))
            elif not owners[f] & installed_by_run_sh:
                for package in sorted(owners[f]):
                    problems[package].append((f, source))
    return problems, unowned


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="append", required=True, help="a configured and built build dir")
    parser.add_argument("--imports", action="append", default=[], help="module files logged by the pytest run")
    parser.add_argument("--allow-unowned", action="append", default=[],
                        help="a path prefix whose files may be owned by no package")
    args = parser.parse_args()

    builds = [os.path.abspath(b) for b in args.build]
    inside = [ROOT] + builds
    files = {"configure": external_files(configure_probe(builds[0]), inside)}
    for build in builds:
        name = os.path.basename(build)
        files[f"cache {name}"] = external_files(cache_paths(build), inside)
        files[f"ninja {name}"] = external_files(ninja_file_paths(build), inside)
        files[f"deps {name}"] = external_files(ninja_deps_paths(build), inside)
    for log in args.imports:
        files["import"] = external_files(import_paths(log), inside)

    listed = run_sh_packages()
    problems, unowned = check(files, listed, installed_packages())
    unowned = [(f, s) for f, s in unowned if not f.startswith(tuple(args.allow_unowned))]

    total = len({f for fs in files.values() for f in fs})
    for package, rows in sorted(problems.items()):
        print(f"check_build_deps: package {package} is not installed by run.sh (nor pulled in by its list):")
        for f, source in rows:
            print(f"  {f}  ({source})")
    for f, source in unowned:
        print(f"check_build_deps: {f} ({source}) belongs to no Debian package")
    if problems or unowned:
        print(f"check_build_deps: FAILED: {len(problems)} package(s) missing from run.sh's list, "
              f"{len(unowned)} file(s) from no package; {total} files checked")
        return 1
    print(f"check_build_deps: ok: {total} files read from outside the tree, every one from a package "
          f"that run.sh installs ({len(listed)} listed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
