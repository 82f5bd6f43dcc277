/*
 * tmpdir — fresh temporary directories for tests, and small file helpers.
 *
 * test_tmpdir_new() makes a new, empty directory under $TMPDIR (or /tmp when
 * unset or empty) named "hooked-<tag>-XXXXXX"; test_tmpdir_remove() deletes
 * it and everything below it (symbolic links are removed, not followed).
 * These use the C library directly (malloc, POSIX calls), never an hk_fs, so
 * they can set up and inspect what the library wrote through a faulty one.
 * Everything aborts the test process on an unexpected OS error, because a
 * test cannot continue without its directory.
 */
#ifndef HOOKED_TEST_TMPDIR_H
#define HOOKED_TEST_TMPDIR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Create a fresh directory. @return its path (malloc; free()). Never NULL. */
char *test_tmpdir_new(const char *tag);
/** Remove `path` recursively. @return 0, or -1 when something could not be
 *  removed (it keeps going). NULL is a no-op returning 0. */
int test_tmpdir_remove(const char *path);
/** Remove recursively, then free(path). NULL is a no-op. */
void test_tmpdir_free(char *path);

/** "dir/name" (malloc; free()). Never NULL. */
char *test_path(const char *dir, const char *name);
/** Write (create or truncate) a file with n bytes. @return 0 or -1. */
int test_write_file(const char *path, const void *data, size_t n);
/** Read a whole file (malloc'd, NUL-terminated; free()). @return NULL when
 *  it cannot be read. @param n  may be NULL; receives the size. */
char *test_read_file(const char *path, size_t *n);
/** @return nonzero when `path` exists (any type, links not followed). */
int test_path_exists(const char *path);
/** @return the number of entries of dir (without "." and ".."), -1 on error. */
int test_dir_count(const char *dir);
/** @return the number of entries of dir whose name contains substr, -1 on error. */
int test_dir_count_matching(const char *dir, const char *substr);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TEST_TMPDIR_H */
