/*
 * test_crc32c_portable: the tests of test_crc32c.c run against the portable
 * slicing-by-8 path, compiled here from src/util/crc32c.c with
 * HK_CRC32C_FORCE_PORTABLE (tests/CMakeLists.txt), so it is tested even on
 * CPUs where the library selects SSE4.2.
 */
#define HK_CRC32C_TEST_PORTABLE 1
#include "test_crc32c.c"
