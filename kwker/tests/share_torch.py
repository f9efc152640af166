"""Makes this environment's torch importable in another venv (the wheel smoke test's), by
symbolic links to torch and every distribution it requires, dist-info included, in that venv's
site-packages. Installing the 900 MB CPU wheel again would cost half a minute of `make test`;
the Kwker wheel under test is still installed non-editable on its own.

    python kwker/tests/share_torch.py <venv>
"""
import importlib.metadata as md
import os
import re
import sys
import sysconfig


def closure(name, seen=None):
    seen = {} if seen is None else seen
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        return seen
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        return seen
    seen[key] = dist
    for req in dist.requires or []:
        if "extra ==" in req:
            continue
        closure(re.match(r"[A-Za-z0-9_.\-]+", req).group(0), seen)
    return seen


def main(venv):
    py = f"python{sys.version_info.major}.{sys.version_info.minor}"
    target = os.path.join(venv, "lib", py, "site-packages")
    here = sysconfig.get_paths()["purelib"]
    tops = set()
    for dist in closure("torch").values():
        for f in dist.files or []:
            if f.parts[0] not in ("..", "__pycache__"):
                tops.add(f.parts[0])
    made = 0
    for top in sorted(tops):
        src, dst = os.path.join(here, top), os.path.join(target, top)
        if os.path.exists(src) and not os.path.lexists(dst):
            os.symlink(src, dst)
            made += 1
    print(f"share_torch: {made} links from {here} into {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
