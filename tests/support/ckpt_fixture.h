/*
 * ckpt_fixture — small helpers the checkpoint tests share: a fresh checkpoint
 * directory with the Saver's usual save path, and looks at what a save left
 * there (a data file's presence; the global step and one int64 scalar a
 * checkpoint recorded, read through the public reader).
 */
#ifndef HOOKED_TEST_CKPT_FIXTURE_H
#define HOOKED_TEST_CKPT_FIXTURE_H

#include <stdint.h>

#include <hooked/hooked.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A fresh temporary tree (test_tmpdir_new(tag)) in *root, the directory
 *  "<root>/ck" created in *dir, and "<dir>/model.ckpt" in *save_path (all
 *  malloc; ckpt_dir_free()). Aborts the test on failure. */
void ckpt_dir_new(const char *tag, char **root, char **dir, char **save_path);
/** Remove the tree and free the three strings (NULLs are fine). */
void ckpt_dir_free(char *root, char *dir, char *save_path);

/** 1 when "<dir>/<base>-<step>.safetensors" exists, else 0. */
int ckpt_data_exists(const char *dir, const char *base, int64_t step);

/** How many entries of `dir` have names that start with `prefix`. Aborts
 *  the test when dir cannot be opened. */
int ckpt_count_entries(const char *dir, const char *prefix);
/** 1 when rank r of n wrote its shard of "<dir>/model.ckpt-<step>":
 *  "<dir>/model.ckpt-<step>.shard-RRRRR-of-NNNNN.safetensors" exists. */
int ckpt_shard_exists(const char *dir, int64_t step, int r, int n);
/** Open checkpoint "<dir>/model.ckpt-<step>" through env, verify it first
 *  when `verify` is set, and return its global step in *gs and the value of
 *  its int64 scalar `var` in *v. Each call must succeed (assert_ok on st). */
void ckpt_read_i64(hk_env *env, const char *dir, int64_t step, int verify, const char *var, int64_t *gs, int64_t *v,
                   hk_status *st);

#ifdef __cplusplus
}
#endif

#endif
