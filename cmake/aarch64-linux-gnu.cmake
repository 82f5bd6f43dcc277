# A CMake toolchain file for building hooked for 64-bit ARM Linux on a
# Debian x86-64 machine, with Debian's cross compilers, and running its
# tests there under qemu-user:
#
#   apt-get install gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user
#   dpkg --add-architecture arm64 && apt-get update && apt-get install libcmocka-dev:arm64
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   cmake --build build-aarch64 --target test_crc32c test_crc32c_portable
#   ctest --test-dir build-aarch64 -R crc32c
#
# ctest runs each test program through CMAKE_CROSSCOMPILING_EMULATOR:
# qemu-aarch64 with the cross C library's root (-L) for its loader and
# libraries; the arm64 libraries installed through Debian's multiarch (such
# as cmocka) are in /usr/lib/aarch64-linux-gnu, where the loader finds them
# too. QEMU_CPU in the environment picks the CPU qemu emulates (its default,
# max, has the CRC32 extension and PMULL).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
# Programs (python3, the host's tools) from the host; libraries from the
# cross root first, and from the arm64 multiarch directory that
# CMAKE_LIBRARY_ARCHITECTURE names (where libcmocka-dev:arm64 puts cmocka).
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
