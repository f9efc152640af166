"""Writes a copy of a Kwker wheel whose compiled PyTorch operators claim another torch (2.12):
its _torch_build.json, its version (+torch2.12), its `torch` extra's pin and RECORD are rewritten, the .so is kept. make
test-wheel installs it to check the version-mismatch path of a real installation.

    python kwker/tests/fake_torch_wheel.py <wheel> <out dir>
"""
import base64
import hashlib
import os
import re
import sys
import zipfile


def _hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main(wheel, out_dir):
    name = os.path.basename(wheel)
    m = re.match(r"kwker-([^-]+)-(.*)\.whl$", name)
    version = m.group(1)
    fake = re.sub(r"\+torch[0-9.]+$", "", version) + "+torch2.12"
    files = {}
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            files[info.filename] = z.read(info.filename)
    old_info, new_info = f"kwker-{version}.dist-info", f"kwker-{fake}.dist-info"
    renamed = {}
    for path, data in files.items():
        if path == "kwker/_torch_build.json":
            data = b'{"torch": "2.12.0", "torch_minor": "2.12"}\n'
        if path.startswith(old_info + "/"):
            path = new_info + path[len(old_info):]
            if path.endswith("/METADATA"):
                data = re.sub(rb"^Version: .*$", b"Version: " + fake.encode(), data, flags=re.M)
                # The `torch` extra pins the minor the operators claim (build_support/torch_version.py).
                data = re.sub(rb"^Requires-Dist: torch[<>=,.0-9]*; extra == \"torch\"$",
                              b'Requires-Dist: torch<2.13,>=2.12; extra == "torch"', data, flags=re.M)
        renamed[path] = data
    record = new_info + "/RECORD"
    lines = [f"{p},{_hash(d)},{len(d)}" for p, d in renamed.items() if p != record]
    renamed[record] = ("\n".join(lines + [f"{record},,"]) + "\n").encode()
    target = os.path.join(out_dir, f"kwker-{fake}-{m.group(2)}.whl")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in renamed.items():
            z.writestr(path, data)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
