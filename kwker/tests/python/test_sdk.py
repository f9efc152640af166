"""The C/C++ SDK inside the installed package: a C program, a C++ program using kwker.hpp and a
CMake project using find_package(kwker) are built with the system compiler and run."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None,
                                reason="needs the system C and C++ compilers (gcc, g++)")


def _sdk():
    out = subprocess.run([sys.executable, "-m", "kwker", "sdk", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
    return r.stdout


C_PROGRAM = textwrap.dedent("""
    #include <math.h>
    #include <stdio.h>
    #include <kwker/kwker.h>
    int main(void) {
      if (kwker_abi_version() != KWKER_ABI_VERSION) return 3;
      float v[6] = {3.0f, NAN, -1.0f, 2.0f, -0.0f, 0.0f};
      int64_t idx[6];
      if (kwker_argsort(KWKER_FLOAT32, v, 6, idx, KWKER_DESCENDING, 0) != KWKER_OK) return 4;
      if (kwker_sort(KWKER_FLOAT32, v, 6, 0, 0) != KWKER_OK) return 5;
      for (int i = 0; i < 6; ++i) printf("%g ", v[i]);
      printf("|");
      for (int i = 0; i < 6; ++i) printf(" %lld", (long long)idx[i]);
      int64_t bad[2] = {0, 9};
      int rc = kwker_sort_segments(KWKER_FLOAT32, v, 6, bad, 2, 0, 0);
      printf("\\n%d %s\\n", rc, kwker_last_error());
      return 0;
    }
""")

CPP_PROGRAM = textwrap.dedent("""
    #include <cstdio>
    #include <vector>
    #include <kwker/kwker.hpp>
    int main() {
      std::vector<int64_t> v = {5, 3, 5, 1};
      auto idx = kwker::argsort(v, kwker::Options{true});  // descending, stable
      kwker::sort(v);
      for (auto x : v) std::printf("%lld ", (long long)x);
      std::printf("|");
      for (auto i : idx) std::printf(" %lld", (long long)i);
      try {
        kwker::set_isa("no-such-engine");
      } catch (const kwker::Error &e) {
        std::printf("\\nerror %d: %s\\n", e.status(), e.what());
      }
      return kwker::runtime_info().find("kwker.runtime_info") == std::string::npos;
    }
""")


def _build_and_run(tmp_path, source, suffix, compiler, std):
    """Compiles `source` against the installed SDK with the system compiler, runs it."""
    sdk = _sdk()
    src = tmp_path / f"prog{suffix}"
    src.write_text(source)
    exe = tmp_path / "prog"
    _run([compiler, f"-std={std}", "-O1", str(src), "-I", sdk["include_dir"],
          "-L", sdk["lib_dir"], f"-Wl,-rpath,{sdk['lib_dir']}", "-lkwker", "-o", str(exe)])
    return _run([str(exe)]).splitlines()


def test_c_program_against_the_sdk(tmp_path):
    out = _build_and_run(tmp_path, C_PROGRAM, ".c", "gcc", "c11")
    assert out[0] == "-1 -0 0 2 3 nan | 0 3 4 5 2 1"
    assert out[1].startswith("1 kwker_sort_segments: offsets[1] = 9 is outside [0, 6]")


def test_cpp_program_with_the_header_only_sugar(tmp_path):
    out = _build_and_run(tmp_path, CPP_PROGRAM, ".cpp", "g++", "c++17")
    assert out[0] == "1 3 5 5 | 0 2 1 3"
    assert out[1].startswith("error 4: unknown engine 'no-such-engine'")


def test_pkg_config_file_points_into_the_sdk():
    sdk = _sdk()
    pc = os.path.join(sdk["lib_dir"], "pkgconfig", "kwker.pc")
    with open(pc) as f:
        text = f.read()
    assert "prefix=${pcfiledir}/../.." in text and "-lkwker" in text
    # The relative prefix resolves to the SDK folders this package reports.
    prefix = os.path.normpath(os.path.join(os.path.dirname(pc), "..", ".."))
    assert os.path.samefile(os.path.join(prefix, "include"), sdk["include_dir"])
    assert os.path.samefile(os.path.join(prefix, "lib"), sdk["lib_dir"])
    if shutil.which("pkg-config"):
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pc))
        flags = _run(["pkg-config", "--cflags", "--libs", "kwker"], env=env).split()
        assert "-lkwker" in flags
        inc = [f[2:] for f in flags if f.startswith("-I")]
        assert inc and os.path.samefile(inc[0], sdk["include_dir"])


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_cmake_find_package(tmp_path):
    sdk = _sdk()
    (tmp_path / "main.cpp").write_text(CPP_PROGRAM)
    (tmp_path / "CMakeLists.txt").write_text(textwrap.dedent("""
        cmake_minimum_required(VERSION 3.18)
        project(uses_kwker CXX)
        set(CMAKE_CXX_STANDARD 17)
        find_package(kwker REQUIRED)
        add_executable(prog main.cpp)
        target_link_libraries(prog PRIVATE kwker::kwker)
        set_target_properties(prog PROPERTIES BUILD_RPATH "${KWKER_LIB_DIR}")
    """))
    build = tmp_path / "build"
    _run(["cmake", "-S", str(tmp_path), "-B", str(build), f"-Dkwker_DIR={sdk['cmake_dir']}",
          f"-DKWKER_LIB_DIR={sdk['lib_dir']}"])
    _run(["cmake", "--build", str(build)])
    out = _run([str(build / "prog")]).splitlines()
    assert out[0] == "1 3 5 5 | 0 2 1 3"


def test_c_api_doc_example_runs_as_printed(tmp_path):
    """The C++ example of docs/c-api.md, pasted into a main() as a user would."""
    import pathlib
    import re
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "c-api.md").read_text()
    (block,) = re.findall(r"```cpp\n(.*?)```", doc, flags=re.S)
    include = "\n".join(ln for ln in block.splitlines() if ln.startswith("#include"))
    body = "\n".join(ln for ln in block.splitlines() if not ln.startswith("#include"))
    source = (f"#include <cmath>\n#include <cstdio>\n{include}\nint main() {{\n{body}\n"
              '  for (float x : v) std::printf("%g ", x);\n  return 0;\n}\n')
    out = _build_and_run(tmp_path, source, ".cpp", "g++", "c++17")
    # The block's own comment says what v holds afterwards.
    promised = re.search(r"// v = \{(.*)\}", block).group(1)
    assert out[0].split() == [x.strip().lower() for x in promised.split(",")]
