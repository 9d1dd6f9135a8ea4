"""Unit tests of tools/check_build_deps.py on made-up dpkg data (the live check runs in ./run.sh test)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import check_build_deps as deps  # noqa: E402


def status(*rows):
    return deps.parse_status("\n".join("\t".join(row) for row in rows))


def test_parse_alternatives_drops_versions_and_arch():
    field = "libc6 (>= 2.34), opencl-c-headers (>= 3.0~2023) | opencl-headers, python3:any, libfoo [amd64]"
    assert deps.parse_alternatives(field) == [["libc6"], ["opencl-c-headers", "opencl-headers"], ["python3"],
                                              ["libfoo"]]
    assert deps.parse_alternatives("") == []


def test_closure_follows_depends_and_predepends_recursively():
    packages = status(
        ("top", "no", "optional", "mid", "pre", ""),
        ("mid", "no", "optional", "leaf (>= 1)", "", ""),
        ("pre", "no", "optional", "", "", ""),
        ("leaf", "no", "optional", "", "", ""),
        ("other", "no", "optional", "", "", ""),
    )
    assert deps.closure(["top"], packages) == {"top", "mid", "pre", "leaf"}


def test_closure_takes_the_first_installed_alternative_only():
    # 'a | b' with both installed: apt would pull only a; b installed by hand must not count.
    packages = status(
        ("top", "no", "optional", "a | b, missing | c", "", ""),
        ("a", "no", "optional", "", "", ""),
        ("b", "no", "optional", "", "", ""),
        ("c", "no", "optional", "", "", ""),
    )
    assert deps.closure(["top"], packages) == {"top", "a", "c"}


def test_closure_resolves_virtual_packages_through_providers():
    packages = status(
        ("top", "no", "optional", "libopencl-1.2-1", "", ""),
        ("ocl-icd-libopencl1", "no", "optional", "", "", "libopencl-1.2-1, libopencl1"),
    )
    assert deps.closure(["top"], packages) == {"top", "ocl-icd-libopencl1"}


def test_base_packages_are_marked():
    packages = status(("dash", "yes", "required", "", "", ""), ("libc6", "no", "required", "", "", ""),
                      ("vim", "no", "optional", "", "", ""))
    assert [packages[n]["base"] for n in ("dash", "libc6", "vim")] == [True, True, False]


def test_strace_paths_keeps_successful_calls_only():
    log = "\n".join([
        '12 openat(AT_FDCWD, "/usr/include/CL/cl.h", O_RDONLY) = 4',
        '12 access("/opt/CL/cl.h", R_OK) = -1 ENOENT (No such file or directory)',
        '13 execve("/usr/bin/c++", ["/usr/bin/c++", "-v"], 0x7ff /* 20 vars */) = 0',
        '14 stat("/usr/lib/x.so",  <unfinished ...>',
        '15 newfstatat(AT_FDCWD, "relative/path", {st_mode=S_IFREG|0644}, 0) = 0',
    ])
    assert deps.strace_paths(log) == {"/usr/include/CL/cl.h", "/usr/bin/c++"}


def test_path_variants_toggle_merged_usr_and_keep_the_link_first(tmp_path):
    target = tmp_path / "libz.so.1"
    target.write_text("")
    link = tmp_path / "libz.so"
    link.symlink_to(target)
    assert deps.path_variants(str(link)) == [[str(link)], [str(target)]]
    assert deps.path_variants("/usr/lib/x86_64-linux-gnu/libc.so.6")[0] == [
        "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"]
    assert deps.path_variants("/bin/sh")[0] == ["/bin/sh", "/usr/bin/sh"]


def test_check_names_the_package_and_the_file(monkeypatch):
    packages = status(
        ("libdnnl-dev", "no", "optional", "libdnnl2", "", ""),
        ("libdnnl2", "no", "optional", "", "", ""),
        ("opencl-c-headers", "no", "optional", "", "", ""),
        ("dash", "yes", "required", "", "", ""),
    )
    owners = {"/usr/include/CL/cl.h": {"opencl-c-headers"}, "/usr/include/dnnl.h": {"libdnnl-dev"},
              "/bin/sh": {"dash"}, "/usr/local/bin/tool": set()}
    monkeypatch.setattr(deps, "owners_of", lambda files: {f: owners[f] for f in files})
    problems, unowned = deps.check({"configure": set(owners)}, ["libdnnl-dev"], packages)
    assert dict(problems) == {"opencl-c-headers": [("/usr/include/CL/cl.h", "configure")]}
    assert unowned == [("/usr/local/bin/tool", "configure")]
