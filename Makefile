# tern: the front door.
#   make test          set up the host, the Debian 13 sysroot, build build/x86_64, run ctest
#   make demo          same set-up and build, then tools/demo.sh build/x86_64
#   make build         set up + build only
#   make clean         remove build/
#   make format        clang-format -i on tracked C/C++ files
#   make format-check  fail if any tracked C/C++ file is not formatted
#
# Builds live in build/<target>; a target maps to a toolchain file and a sysroot arch below,
# so `make build/x86_64` works, and ARM targets can be added with two more lines each.
# Sysroots are cached outside the clone in /var/cache/tern/sysroot/trixie-<arch>. The env
# variable TERN_SYSROOT_DIR moves one sysroot (x86_64 builds only: ARM builds use two).
# Other knobs: TARGET=x86_64|aarch64|armv7, BUILD_TYPE, WERROR=ON|OFF, JOBS, CMAKE_ARGS.

TARGET     ?= x86_64
BUILD_TYPE ?= Release
WERROR     ?= ON
JOBS       ?= 2
CMAKE_ARGS ?=

toolchain_x86_64  := toolchains/x86_64-linux-gnu.cmake
arch_x86_64       := amd64
toolchain_aarch64 := toolchains/aarch64-linux-gnu.cmake
arch_aarch64      := arm64
toolchain_armv7   := toolchains/arm-linux-gnueabihf.cmake
arch_armv7        := armhf

BUILD_DIR := build/$(TARGET)

.PHONY: all test demo build setup install clean format format-check FORCE
all: build

# Host packages (+ ARM cross tools when the target is not x86_64) and the sysroot(s).
# ARM builds also need the amd64 sysroot: its flatc (wrapped) is the host flatc.
setup-%: FORCE
	tools/setup-host.sh $(if $(filter x86_64,$*),,arm)
	tools/sysroot/make-sysroot.sh amd64
	$(if $(filter-out amd64,$(arch_$*)),tools/sysroot/make-sysroot.sh $(arch_$*))

# Configure and build one target's build dir. Configuring every time is cheap and picks up
# new subdirectories and changed CMAKE_ARGS.
build/%: setup-% FORCE
	@test -n "$(toolchain_$*)" || { echo "unknown target '$*'"; exit 2; }
	cmake -S . -B $@ -G Ninja -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/$(toolchain_$*) \
	  -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DTERN_WERROR=$(WERROR) $(CMAKE_ARGS)
	cmake --build $@ -j $(JOBS)

setup: setup-$(TARGET)
build: $(BUILD_DIR)

test: $(BUILD_DIR)
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

demo: $(BUILD_DIR)
	tools/demo.sh $(BUILD_DIR)

# make install [PREFIX=/usr/local]: libtern.so, tern.h, the tern tool, CMake and pkg-config files.
PREFIX ?= /usr/local
install: $(BUILD_DIR)
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf build

FORMAT_FILES = $(shell git ls-files -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' '*.inc')
format:
	$(if $(strip $(FORMAT_FILES)),clang-format -i $(FORMAT_FILES),@echo "nothing to format")

format-check:
	$(if $(strip $(FORMAT_FILES)),clang-format --dry-run -Werror $(FORMAT_FILES),@echo "nothing to check")

FORCE:
