# Cross build for arm64 (aarch64) on a Debian 12 x86-64 host, through
# multiarch: Debian's cross compilers and the arm64 builds of the libraries
# beside the host's own (scripts/deps.sh --arm64 installs both).
#
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64.cmake
#   cmake --build build-arm64 --target shmbpf
#
# The BPF programs are compiled by the host's clang, as for a native build,
# for the target's architecture: cmake/BpfObject.cmake takes it from
# CMAKE_SYSTEM_PROCESSOR (__TARGET_ARCH_arm64, vmlinux/arm64/vmlinux.h).
# The arm64 programs the build runs (the test binaries' listing of their
# tests, the shell completions it writes) run under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The host's pkg-config reads the arm64 libraries' files only (their flags
# and the definitions cpp-httplib was built with).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")

find_program(SHMBPF_QEMU_AARCH64 qemu-aarch64)
if(SHMBPF_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${SHMBPF_QEMU_AARCH64})
endif()

# The benchmarks measure the machine they run on: not built here.
set(SHMBPF_BUILD_BENCH OFF CACHE BOOL "Build the benchmarks in bench/")

# jemalloc's arm64 build is not Multi-Arch (it would replace the host's),
# and its page size must match the kernel's (arm64 kernels come with 4, 16
# or 64 KiB pages): the C library's malloc instead.
set(SHMBPF_JEMALLOC OFF CACHE BOOL "Link jemalloc statically" FORCE)
