# tern: the front door.
#   make test          set up the host (packages, the test suite's npm package) and the Debian 13
#                      sysroots, then build (-Werror) and test,
#                      in this order: x86_64, x86_64-portable (no XNNPACK), x86_64-asan (ASan +
#                      UBSan), aarch64 (under qemu-aarch64), armv7 (under qemu-arm); a summary
#                      with times at the end
#   make test TARGET=aarch64    one configuration only (any target below)
#   make demo          set up, build build/x86_64, then tools/demo.sh build/x86_64
#   make build         set up + build only (TARGET=...)
#   make size          tools/size_report.sh: stripped sizes per architecture (docs/size.md)
#   make clean         remove build/
#   make format        clang-format -i on tracked C/C++ files
#   make format-check  fail if any tracked C/C++ file is not formatted
#
# Targets: x86_64, aarch64, armv7, and each of them with -portable (XNNPACK off: reference
# kernels only), e.g. x86_64-portable. A target builds in build/<target> with the toolchain file
# and sysroot of its architecture, so `make build/armv7-portable` works too. ARM builds run
# their tests under qemu-user (docs/cross-compiling.md).
# Sysroots are cached outside the clone in /var/cache/tern/sysroot/trixie-<arch>. The env
# variable TERN_SYSROOT_DIR moves one sysroot (x86_64 builds only: ARM builds use two).
# Other knobs: BUILD_TYPE, WERROR=ON|OFF, JOBS, CMAKE_ARGS, TEST_TARGETS (the list `make test`
# runs), CTEST_ARGS (e.g. CTEST_ARGS='-L runtime'), TEST_TIMEOUT (seconds per test).

TARGET     ?= x86_64
BUILD_TYPE ?= Release
WERROR     ?= ON
JOBS       ?= 2
CMAKE_ARGS ?=
CTEST_ARGS ?=
TEST_TIMEOUT ?= 900
# `make test` runs every configuration, unless TARGET was given explicitly.
ifeq ($(origin TARGET),command line)
TEST_TARGETS ?= $(TARGET)
else
# x86-64 (natively), without XNNPACK, under ASan + UBSan, then aarch64 and armv7 under qemu
# (each also on an older CPU model: docs/cross-compiling.md).
TEST_TARGETS ?= x86_64 x86_64-portable x86_64-asan aarch64 armv7
endif

toolchain_x86_64  := toolchains/x86_64-linux-gnu.cmake
arch_x86_64       := amd64
toolchain_aarch64 := toolchains/aarch64-linux-gnu.cmake
arch_aarch64      := arm64
toolchain_armv7   := toolchains/arm-linux-gnueabihf.cmake
arch_armv7        := armhf

# <arch>[-portable] -> <arch>; its toolchain, Debian architecture and extra CMake arguments.
base_of      = $(patsubst %-asan,%,$(patsubst %-portable,%,$(1)))
toolchain_of = $(toolchain_$(call base_of,$(1)))
arch_of      = $(arch_$(call base_of,$(1)))
args_of      = -DTERN_WITH_XNNPACK=$(if $(filter %-portable,$(1)),OFF,ON) \
               $(if $(filter %-asan,$(1)),-DTERN_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo $(asan_flags))
# Sanitizer builds: -O2 as RelWithDebInfo, but line tables only (-g1): enough for the
# sanitizers' stack traces (function, file, line), and full -g made the ASan + UBSan build the
# longest part of `make test` (the converter's JSON-heavy files and tests took 40% longer to
# compile with it).
asan_flags   = '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG' \
               '-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG'
# Sanitizer builds fail on the first UB report and check leaks.
san_env_of   = $(if $(filter %-asan,$(1)),UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1)
# Host packages: the ARM cross compilers and qemu-user only when some target needs them.
host_args_of = $(if $(filter-out x86_64,$(foreach t,$(1),$(call base_of,$(t)))),arm)

BUILD_DIR := build/$(TARGET)

.PHONY: all test demo build setup size install fuzz clean format format-check FORCE
all: build

# Host packages and the sysroot(s). ARM builds also need the amd64 sysroot: its flatc
# (wrapped) is the host flatc.
setup-%: FORCE
	@test -n "$(call toolchain_of,$*)" || \
	  { echo "unknown target '$*' (x86_64, aarch64, armv7, each also as <target>-portable)"; exit 2; }
	tools/setup-host.sh $(call host_args_of,$*)
	tools/sysroot/make-sysroot.sh amd64
	$(if $(filter-out amd64,$(call arch_of,$*)),tools/sysroot/make-sysroot.sh $(call arch_of,$*))

# Configure and build one target's build dir. Configuring every time is cheap and picks up
# new subdirectories and changed CMAKE_ARGS.
build/%: setup-% FORCE
	cmake -S . -B $@ -G Ninja -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/$(call toolchain_of,$*) \
	  -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DTERN_WERROR=$(WERROR) $(call args_of,$*) $(CMAKE_ARGS)
	cmake --build $@ -j $(JOBS)

setup: setup-$(TARGET)
build: $(BUILD_DIR)

# One configuration: build, then ctest (ARM: every test binary runs under qemu, see the
# toolchain files; tests labelled cpu-<model> run the runtime tests on an older CPU model).
run_ctest = $(call san_env_of,$(1)) ctest --test-dir build/$(1) --output-on-failure -j $(JOBS) --timeout $(TEST_TIMEOUT) $(CTEST_ARGS)
test-%: build/% FORCE
	$(call run_ctest,$*)
ctest-%: FORCE
	$(call run_ctest,$*)

# Every configuration in TEST_TARGETS, in order. A failing one does not stop the others; the
# summary says which failed and how long each build and test run took, and make fails.
test: FORCE
	tools/setup-host.sh test $(call host_args_of,$(TEST_TARGETS))
	$(if $(filter x86_64,$(TEST_TARGETS)),tools/setup-npm.sh)
	@failed=""; summary=""; all_start=$$(date +%s); \
	for t in $(TEST_TARGETS); do \
	  echo "=== make test: $$t"; \
	  s=$$(date +%s); \
	  if $(MAKE) --no-print-directory build/$$t; then \
	    b=$$(date +%s); \
	    if $(MAKE) --no-print-directory ctest-$$t; then r=passed; else r="TESTS FAILED"; fi; \
	  else b=$$(date +%s); r="BUILD FAILED"; fi; \
	  e=$$(date +%s); \
	  case $$r in passed) ;; *) failed="$$failed $$t";; esac; \
	  summary="$$summary$$(printf '  %-18s build %4d s   test %4d s   %s' $$t $$((b - s)) $$((e - b)) "$$r")\n"; \
	done; \
	printf "=== make test: %d s in all\n$$summary" $$(( $$(date +%s) - all_start )); \
	if [ -n "$$failed" ]; then echo "=== make test: FAILED:$$failed"; exit 1; fi

demo: $(BUILD_DIR)
	tools/demo.sh $(BUILD_DIR)

# Stripped sizes of the runtime core, the tern tool and a minimal program per architecture.
SIZE_TARGETS ?= x86_64 aarch64 armv7
size: $(addprefix build/,$(SIZE_TARGETS))
	tools/size_report.sh $(SIZE_TARGETS)

# make install [PREFIX=/usr/local]: libtern.so, tern.h, the tern tool, CMake and pkg-config files.
PREFIX ?= /usr/local
install: $(BUILD_DIR)
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# make fuzz [FUZZ_TARGET=all|load|safetensors|torch|pickle|zip|npz|text|decode] [FUZZ_SECONDS=60]:
# libFuzzer targets with ASan + UBSan, built with clang into build/fuzz (docs/fuzzing.md).
FUZZ_TARGET  ?= all
FUZZ_SECONDS ?= 60
fuzz:
	tools/fuzz/setup.sh
	tools/fuzz/run.sh $(FUZZ_TARGET) $(FUZZ_SECONDS)

clean:
	rm -rf build

FORMAT_FILES = $(shell git ls-files -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' '*.inc')
format:
	$(if $(strip $(FORMAT_FILES)),clang-format -i $(FORMAT_FILES),@echo "nothing to format")

format-check:
	$(if $(strip $(FORMAT_FILES)),clang-format --dry-run -Werror $(FORMAT_FILES),@echo "nothing to check")

FORCE:
