/*
 * The version three ways must agree: the CMake package that was found
 * (HOOKED_PACKAGE_VERSION, passed in by CMakeLists.txt from hooked_VERSION),
 * the header's HOOKED_VERSION_* macros and the library linked (hk_version()).
 */
#include <hooked/hooked.h>
#include <stdio.h>
#include <string.h>

#define STR2(x) #x
#define STR(x) STR2(x)

int main(void) {
  const char *macros = STR(HOOKED_VERSION_MAJOR) "." STR(HOOKED_VERSION_MINOR) "." STR(HOOKED_VERSION_PATCH);
  int failed = 0;

  if (strcmp(HOOKED_VERSION_STRING, HOOKED_PACKAGE_VERSION) != 0) {
    fprintf(stderr, "HOOKED_VERSION_STRING is %s but the package is %s\n", HOOKED_VERSION_STRING,
            HOOKED_PACKAGE_VERSION);
    failed = 1;
  }
  if (strcmp(macros, HOOKED_PACKAGE_VERSION) != 0) {
    fprintf(stderr, "HOOKED_VERSION_MAJOR.MINOR.PATCH is %s but the package is %s\n", macros, HOOKED_PACKAGE_VERSION);
    failed = 1;
  }
  if (strcmp(hk_version(), HOOKED_PACKAGE_VERSION) != 0) {
    fprintf(stderr, "hk_version() is %s but the package is %s\n", hk_version(), HOOKED_PACKAGE_VERSION);
    failed = 1;
  }
  if (hk_version_number() != HOOKED_VERSION_MAJOR * 10000 + HOOKED_VERSION_MINOR * 100 + HOOKED_VERSION_PATCH) {
    fprintf(stderr, "hk_version_number() is %d but the macros say %s\n", hk_version_number(), macros);
    failed = 1;
  }
  if (failed) return 1;
  printf("hooked %s: package, header and library agree\n", hk_version());
  return 0;
}
