"""Checks a Kwker wheel after `auditwheel repair` (make test-wheel): its manylinux tag is what
`auditwheel show` says the binaries need, and torch's libraries are not inside it.

    python kwker/tests/check_wheel_tag.py <repaired wheel> [<glibc the build linked against>]

`auditwheel show` is run with torch's lib folder as the library path: the compiled operators
need libtorch_cpu, libc10 and libgomp, which the user's torch provides (the repair excluded them
on purpose: a second copy would be a second libtorch and a second OpenMP runtime in the process).
Show cannot know that they were excluded, so its overall tag stays linux_x86_64 while they are
external; what it reports for the symbol versions (sym_tag, torch's own libraries included) is
the tag the wheel can claim, and the only external libraries must be torch's.
"""
import json
import os
import re
import subprocess
import sys
import zipfile

TORCH_LIBS = re.compile(r"^(libtorch.*\.so|libc10\.so|libgomp\.so\.1)$")


def _glibc(tag):
    m = re.match(r"manylinux_(\d+)_(\d+)_", tag)
    return (int(m.group(1)), int(m.group(2))) if m else None


def main(wheel, linked_glibc=""):
    import torch
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    show = [os.path.join(bindir, "auditwheel"), "show", "--ldpaths", torch_lib, wheel]
    report = json.loads(subprocess.run(show[:2] + ["--json"] + show[2:], env=env, check=True,
                                       capture_output=True, text=True).stdout)
    print(subprocess.run(show, env=env, capture_output=True, text=True).stdout.strip())
    sym_tag = report["sym_tag"]
    external = sorted(report["external_libs"])
    problems = []
    if not sym_tag.startswith("manylinux_"):
        problems.append(f"auditwheel show reports {sym_tag!r} for the symbol versions, not a "
                        "manylinux tag")
    if linked_glibc and _glibc(sym_tag) and _glibc(sym_tag) > tuple(map(int, linked_glibc.split("."))):
        problems.append(f"linked against glibc {linked_glibc} but the symbols need {sym_tag}")
    others = [lib for lib in external if not TORCH_LIBS.match(lib)]
    if others:
        problems.append(f"external libraries other than torch's: {others} (bundle or drop them)")
    # Repair names the tags the wheel can claim; none may be older than the symbols allow.
    wheel_tags = re.findall(r"manylinux_\d+_\d+_x86_64", os.path.basename(wheel))
    if not wheel_tags:
        problems.append(f"the repaired wheel's name carries no manylinux tag: {wheel}")
    elif _glibc(sym_tag) and max(map(_glibc, wheel_tags)) < _glibc(sym_tag):
        problems.append(f"the wheel claims {wheel_tags} but its symbols need {sym_tag}")
    with zipfile.ZipFile(wheel) as z:  # grafted copies land in kwker.libs/ as libname-<hash>.so
        grafted = [n for n in z.namelist() if ".libs/" in n and
                   re.match(r"(libtorch|libc10|libgomp)", os.path.basename(n))]
    if grafted:
        problems.append(f"torch's libraries were bundled into the wheel: {grafted}")
    if problems:
        print("check_wheel_tag: " + "; ".join(problems), file=sys.stderr)
        return 1
    print(f"check_wheel_tag: ok (tags {', '.join(wheel_tags)}; symbols need {sym_tag}; "
          f"torch provides {', '.join(external) or 'nothing'})")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
