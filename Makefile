# stackalign — `make run` builds and aligns sample_data/, `make test` builds and
# runs every test. The CUDA part is built when nvcc is found (CUDA=0 forces a
# CPU-only build); DEPS=DIR points at a prefix of Debian packages unpacked
# with ../shared/tools/device-prefix.sh, for machines without them installed.

CXX      ?= g++
NVCC     ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
# nvcc may be a wrapper script (e.g. /usr/local/bin/nvcc), so ask it where its
# toolkit lives instead of guessing from its path.
ifneq ($(NVCC),)
  CUDA_TOP    := $(shell $(NVCC) -dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$$ TOP=//p')
  CUDA_LIBDIR := $(abspath $(firstword $(foreach d,lib64 lib targets/x86_64-linux/lib,\
                   $(if $(wildcard $(CUDA_TOP)/$(d)/libcudart.so),$(CUDA_TOP)/$(d)))))
endif
CUDA     ?= $(if $(CUDA_LIBDIR),1,0)
ifeq ($(CUDA),1)
  ifeq ($(CUDA_LIBDIR),)
    $(error CUDA=1 but no usable toolkit: nvcc '$(NVCC)', libcudart.so not under '$(CUDA_TOP)'; set NVCC=/path/to/cuda/bin/nvcc or build with CUDA=0)
  endif
  # The tilt estimates' GPU twin transforms with cuFFT (kernels/view_correlation).
  ifeq ($(wildcard $(CUDA_LIBDIR)/libcufft.so),)
    $(error CUDA=1 but $(CUDA_LIBDIR) has no libcufft.so: install the toolkit's cuFFT (e.g. the libcufft-dev package of its version) or build with CUDA=0)
  endif
else ifneq ($(NVCC),)
  ifeq ($(origin CUDA),file)
    $(warning nvcc found at $(NVCC) but not libcudart.so; building the CPU-only version)
  endif
endif
# Real code for Ampere and Hopper, plus PTX so newer GPUs can JIT it.
CUDA_ARCHS ?= 80 90
BUILD    ?= build
DEPS     ?=

# No FMA contraction: the CPU and CUDA twins must round identically.
# -fno-math-errno: no code reads errno after a math call, and with it
# sqrt is one instruction, so loops with one run on vector units (the same
# values either way).
OPTFLAGS ?= -O3 -g
# -fPIC: the Python module links the same library.
CXXFLAGS += $(OPTFLAGS) -std=c++17 -fopenmp -ffp-contract=off -fno-math-errno -fPIC -Wall -Wextra -MMD -MP
CPPFLAGS += -DSTACKALIGN_SOURCE_DIR='"$(CURDIR)"' -DSTACKALIGN_BUILD_DIR='"$(abspath $(BUILD))"' -isystem /usr/include/eigen3 \
            -isystem /usr/include/nifti
# `make sanitize` sets this (ASan + UBSan) for a CPU-only build in build-sanitize/.
SANITIZE ?=
CXXFLAGS += $(SANITIZE)
LDFLAGS  += $(SANITIZE)
LDLIBS   += -ltiff -lpng -lteem -lnifti2 -fopenmp
ifneq ($(DEPS),)
  CPPFLAGS += -I$(DEPS)/usr/include -I$(DEPS)/usr/include/x86_64-linux-gnu -isystem $(DEPS)/usr/include/eigen3 \
              -isystem $(DEPS)/usr/include/nifti
  # teem's library sits in usr/lib, not the multiarch folder.
  LDFLAGS  += -L$(DEPS)/usr/lib/x86_64-linux-gnu -Wl,-rpath-link,$(DEPS)/usr/lib/x86_64-linux-gnu \
              -Wl,-rpath,$(abspath $(DEPS))/usr/lib/x86_64-linux-gnu \
              -L$(DEPS)/usr/lib -Wl,-rpath-link,$(DEPS)/usr/lib -Wl,-rpath,$(abspath $(DEPS))/usr/lib
endif

ifeq ($(CUDA),1)
  NVCCFLAGS  ?= -O3 -lineinfo
  NVCCFLAGS  += -DSTACKALIGN_CUDA_LIBDIR='"$(CUDA_LIBDIR)"' -std=c++17 -fmad=false --expt-relaxed-constexpr -Xcompiler -fopenmp -Xcompiler -fPIC \
                $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
                -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
  LDFLAGS    += -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR)
  LDLIBS     += -lcudart -lcufft -ldl
  CU_SRC     := $(shell find kernels -name '*.cu')
  STUB_SRC   :=
else
  CU_SRC     :=
  STUB_SRC   := kernels/cuda_unavailable.cpp
endif

LIB_CPP  := $(filter-out kernels/cuda_unavailable.cpp,$(shell find src kernels pipelines -name '*.cpp')) $(STUB_SRC)
LIB_OBJ  := $(LIB_CPP:%.cpp=$(BUILD)/obj/%.o) $(CU_SRC:%.cu=$(BUILD)/obj/%.cu.o)
TEST_OBJ := $(patsubst %.cpp,$(BUILD)/obj/%.o,$(wildcard tests/*.cpp) tests/fuzz/fuzz_targets.cpp)
BENCH_OBJ:= $(patsubst %.cpp,$(BUILD)/obj/%.o,$(wildcard bench/*.cpp))

MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)

# The Python module (python/), built against this Python's headers and
# pybind11; `make python` puts it in $(BUILD)/python/. pybind11's folder is
# an -I ahead of CPPFLAGS' (-I dirs are searched before any -isystem): an
# interpreter's own pybind11 (3.x on the GPU machine's Python 3.12) must
# win over the DEPS prefix's Debian 2.10, which is for 3.11.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
PY_EXT   := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
# (pybind11's and Python's headers are looked up when the module is built:
# `deps` may have just installed them.)
# A Python without the pybind11 package takes the headers of the DEPS prefix.
PY_INC    = $(PYTHON) -c "import sysconfig, importlib.util as u; p = u.find_spec('pybind11') and __import__('pybind11').get_include() or '$(DEPS)/usr/include'; assert u.find_spec('pybind11') or '$(DEPS)'; print('-isystem', sysconfig.get_paths()['include'], '-I' + p)"
PY_MODULE:= $(BUILD)/python/stackalign$(PY_EXT)
# Another tree's module sources built against this library beside it
# (bench/device.sh): make python PY_SOURCE=... PY_MODULE=...
PY_SOURCE ?= $(wildcard python/*.cpp)

.PHONY: all run run-landmarks test python sanitize fuzz bench-cpu bench-gpu compare deps clean check
all: $(BUILD)/stackalign

deps:
	@$(if $(DEPS),true,bash .ci/install-deps.sh)

$(BUILD)/obj/%.o: %.cpp Makefile | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu Makefile | deps
	@mkdir -p $(dir $@)
	$(NVCC) $(CPPFLAGS) $(NVCCFLAGS) -MMD -MP -MF $(@:.o=.d) -c $< -o $@

$(BUILD)/libstackalign.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/stackalign: $(BUILD)/obj/cli/main.o $(BUILD)/libstackalign.a
	$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests: $(TEST_OBJ) $(BUILD)/libstackalign.a
	$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/bench: $(BENCH_OBJ) $(BUILD)/libstackalign.a
	$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

run: $(BUILD)/stackalign
	$(BUILD)/stackalign run configs/sample_tilt_series.toml

run-landmarks: $(BUILD)/stackalign
	$(BUILD)/stackalign run configs/sample_landmarks.toml

check: $(BUILD)/stackalign
	$(BUILD)/stackalign check configs/sample_tilt_series.toml

python: $(PY_MODULE)

# Every archive the module links keeps its symbols to itself
# (--exclude-libs): the GPU machine's g++ (/opt/gcc) links libstdc++
# statically, and that copy in the module, its symbols exported, got mixed
# with the process's shared libstdc++ whenever numpy was imported first:
# align_stack crashed formatting a number, in a locale facet of the other
# copy. Our own archive's symbols need no export either.
$(PY_MODULE): $(PY_SOURCE) $(wildcard python/*.hpp) $(BUILD)/libstackalign.a | deps
	@mkdir -p $(dir $@)
	@inc=$$($(PY_INC)) || { echo "make python needs $(PYTHON) with pybind11 and its headers (Debian: python3-pybind11, python3-dev)"; exit 1; }; \
	echo "$(CXX) ... -shared $(PY_SOURCE) -o $@"; \
	$(CXX) $$inc $(CPPFLAGS) $(CXXFLAGS) -fvisibility=hidden -shared $(PY_SOURCE) $(BUILD)/libstackalign.a $(LDFLAGS) $(LDLIBS) \
	  -Wl,--exclude-libs,ALL -o $@

# The C++ suite, then the Python module's pytest suite; one summary line:
# the runner prints "N passed, N failed" last (skips on the line above).
test: $(BUILD)/tests $(BUILD)/stackalign $(PY_MODULE)
	@bash tests/run_suite.sh $(BUILD) $(PYTHON)

bench-cpu: $(BUILD)/bench $(BUILD)/stackalign
	$(BUILD)/bench cpu

bench-gpu: $(BUILD)/bench $(BUILD)/stackalign
	$(BUILD)/bench gpu

# The CPU test suite under AddressSanitizer + UndefinedBehaviorSanitizer, in
# its own build folder (CPU-only: the sanitizers do not see into CUDA kernels;
# compute-sanitizer covers those, `bash bench/device.sh check`). Any report fails it.
sanitize:
	$(MAKE) BUILD=build-sanitize CUDA=0 OPTFLAGS="-O1 -g" \
	  SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  build-sanitize/tests build-sanitize/stackalign
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 build-sanitize/tests

# libFuzzer (Debian clang) on the readers of user files: TIFF, MRC, the TOML
# config and point files, FUZZ_SECONDS each, under ASan + UBSan, at most
# 1 GiB per allocation. Seeds: tests/fuzz/corpus/<target>; what crashes is
# saved to tests/fuzz/crashers/<target>/ and replayed by `make test` from then on.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := tiff mrc config points
FUZZ_LIB     := src/io/tiff_io.cpp src/io/mrc_io.cpp src/config/config_reader.cpp src/config/jobs.cpp src/config/schema.cpp \
                src/config/toml_document.cpp src/io/point_files.cpp src/core/image.cpp \
                src/core/natural_sort.cpp tests/fuzz/fuzz_targets.cpp
FUZZ_FLAGS   := -std=c++17 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all $(CPPFLAGS)
fuzz:
	@command -v clang++ >/dev/null || { echo "make fuzz needs clang++ (Debian: clang)"; exit 1; }
	@mkdir -p build-fuzz
	@for t in $(FUZZ_TARGETS); do \
	  clang++ $(FUZZ_FLAGS) -fsanitize=fuzzer -DFUZZ_TARGET=$$t $(FUZZ_LIB) tests/fuzz/fuzz_main.cpp \
	    $(LDFLAGS) -ltiff -o build-fuzz/fuzz_$$t || exit 1; done
	@before=$$(find tests/fuzz/crashers -type f 2>/dev/null | wc -l); \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus-$$t tests/fuzz/crashers/$$t; \
	  echo "== fuzz $$t, $(FUZZ_SECONDS) s"; \
	  build-fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
	    -print_final_stats=1 -artifact_prefix=tests/fuzz/crashers/$$t/ build-fuzz/corpus-$$t tests/fuzz/corpus/$$t \
	    2>&1 | grep -E "stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY|Test unit written" ; \
	done; \
	after=$$(find tests/fuzz/crashers -type f | wc -l); \
	echo "fuzz: $$((after - before)) new crasher(s) (tests/fuzz/crashers holds $$after, replayed by make test)"; \
	test $$after -eq $$before

# The Debian interpreter: the peers (python3-skimage, python3-opencv, ...) are
# installed for it, not for a pyenv/conda python3 that may come first on PATH.
compare: $(BUILD)/stackalign
	$(PYTHON) bench/compare

clean:
	rm -rf $(BUILD) build-sanitize build-fuzz

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
