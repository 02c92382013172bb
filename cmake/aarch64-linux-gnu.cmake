# Cross build for AArch64 (Linux, glibc) on a Debian x86-64 host, with Debian's cross compiler
# (g++-aarch64-linux-gnu) and the arm64 multiarch -dev packages (dpkg --add-architecture arm64):
# their headers are in /usr/include[/aarch64-linux-gnu], their libraries and .pc files in
# /usr/lib/aarch64-linux-gnu. Binaries run under qemu-user (qemu-aarch64-static), which CMake uses
# as the emulator for gtest_discover_tests and ctest. scripts/cross-aarch64.sh does all of it:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Multiarch: the target's libraries live in the host's /usr/lib/aarch64-linux-gnu, so the host
# root is searched (CMAKE_LIBRARY_ARCHITECTURE keeps find_library to the arm64 directory), and
# pkg-config reads only the arm64 .pc files.
# libmariadb-dev and ISA-L cannot be installed for arm64 beside their amd64 twins:
# scripts/cross-aarch64.sh unpacks them elsewhere and names their pkgconfig directories in
# XBAK_AARCH64_PKG_CONFIG.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
if(DEFINED ENV{XBAK_AARCH64_PKG_CONFIG})
  set(ENV{PKG_CONFIG_LIBDIR} "$ENV{XBAK_AARCH64_PKG_CONFIG}:$ENV{PKG_CONFIG_LIBDIR}")
endif()
set(ENV{PKG_CONFIG_PATH} "")

# Binaries run on the arm64 multiarch runtime (libc6:arm64, libstdc++6:arm64: /lib/ld-linux-aarch64.so.1
# and /usr/lib/aarch64-linux-gnu), with no -L prefix. Not with QEMU_LD_PREFIX=/usr/aarch64-linux-gnu:
# the cross toolchain's own glibc there (libc6-arm64-cross 2.36-8cross1) hangs in the first
# pthread_create under qemu-user 7.2 on this kernel, while Debian's current libc6:arm64 does not.
find_program(XBAK_QEMU_AARCH64 qemu-aarch64-static)
if(XBAK_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${XBAK_QEMU_AARCH64}")
endif()
