/*
 * hooked-ckpt — inspect and verify hooked checkpoints (checkpoint-format.md).
 *
 *   hooked-ckpt ls FILE|DIR             tensors (name, dtype, shape, bytes), the step
 *   hooked-ckpt verify [--finite] FILE|DIR  every CRC-32C, and NaN/Inf in floating
 *                                       tensors (warned; with --finite, failed);
 *                                       exit 0 only if all verify
 *   hooked-ckpt dump [--limit N] FILE NAME   the values of one tensor
 *   hooked-ckpt latest DIR              the newest checkpoint that verifies
 *   hooked-ckpt diff A B                compare two checkpoints tensor by tensor
 *   hooked-ckpt check-resume [OPTIONS] -- COMMAND [ARGS...]
 *                                       run COMMAND ({dir}: its checkpoint
 *                                       directory) to its end, then stopped
 *                                       halfway and resumed, and compare every
 *                                       checkpoint the two share (check_resume.c)
 *
 * FILE is a checkpoint prefix ("ckpt/model.ckpt-3000") or its data file
 * ("ckpt/model.ckpt-3000.safetensors"). A sharded checkpoint's prefix
 * (its index "<prefix>.shards") is read whole: its variables assembled
 * from their slices (dump, diff, verify), and ls lists each shard too. For
 * a DIR, ls and verify take the checkpoints its state file lists, oldest
 * first, plus any other "<name>-<step>.safetensors" or "<name>-<step>.shards"
 * in it; diff takes its latest checkpoint (the one `latest` prints).
 *
 * Written only against the public API (hooked/checkpoint.h and the POSIX
 * hk_fs of hooked/sys/fs.h), as any third-party tool could be.
 *
 * Exit status: 0 success; 1 any problem (one line on stderr,
 * "hooked-ckpt: <file>: <message>"); 2 bad usage. diff and check-resume
 * follow cmp(1) and diff(1) instead, so that "different" and "could not
 * tell" stay apart: 0 identical, 1 different, 2 bad usage or a checkpoint
 * that cannot be read (check-resume: or a run of the program that failed).
 *
 * The commands live in the files beside this one (tool.h says which).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_LIMIT 1000

static const char usage_text[] = "usage: " TOOL
                                 " COMMAND ARGS\n"
                                 "\n"
                                 "Inspect and verify hooked checkpoints. FILE is a checkpoint prefix\n"
                                 "(ckpt/model.ckpt-3000) or its data file (ckpt/model.ckpt-3000.safetensors);\n"
                                 "a sharded checkpoint's prefix reads its shards together. DIR is a checkpoint\n"
                                 "directory (its state file 'checkpoint' and every <name>-<step>.safetensors\n"
                                 "or <name>-<step>.shards in it).\n"
                                 "\n"
                                 "commands:\n"
                                 "  ls FILE|DIR                 the global step and every tensor: name, dtype,\n"
                                 "                              shape, bytes\n"
                                 "  verify [--finite] FILE|DIR  check the header and every CRC-32C of each\n"
                                 "                              checkpoint, and that a name <base>-<step> says\n"
                                 "                              the global step it holds; prints OK or FAILED\n"
                                 "                              per file; exit status 0 only if all verify and\n"
                                 "                              one was found. Floating tensors (F16, BF16,\n"
                                 "                              F32, F64) holding NaN or Inf get a line\n"
                                 "                              'WARNING FILE: tensor NAME holds N non-finite\n"
                                 "                              values ...' (exit status still 0); with\n"
                                 "                              --finite that line says FAILED instead and the\n"
                                 "                              checkpoint fails verification (exit status 1)\n"
                                 "  dump [--limit N] FILE NAME  print the values of tensor NAME, at most N\n"
                                 "                              elements (default 1000; 0: all)\n"
                                 "  latest DIR                  print the prefix of the newest checkpoint of DIR\n"
                                 "                              that verifies\n"
                                 "  diff A B                    compare two checkpoints (each a FILE, or a DIR for\n"
                                 "                              its latest checkpoint): every tensor, equal\n"
                                 "                              (bytewise) or not; where values differ, the first\n"
                                 "                              differing element and the largest absolute\n"
                                 "                              difference; tensors only in A or B, dtypes or\n"
                                 "                              shapes that differ, a different global step.\n"
                                 "                              Every tensor is read and CRC-verified\n"
                                 "  check-resume [OPTIONS] -- COMMAND [ARGS...]\n"
                                 "                              prove that COMMAND resumes exactly: run it to\n"
                                 "                              its end, then stopped halfway and resumed, and\n"
                                 "                              compare every checkpoint the two share; {dir}\n"
                                 "                              in ARGS is the checkpoint directory (see\n"
                                 "                              '" TOOL
                                 " check-resume --help')\n"
                                 "\n"
                                 "options:\n"
                                 "  -h, --help                  show this help\n"
                                 "  --version                   show the hooked version\n"
                                 "\n"
                                 "exit status: 0 success, 1 any problem (a message on stderr), 2 bad usage;\n"
                                 "diff: 0 identical (same tensors, dtypes, shapes, bytes and global step),\n"
                                 "1 different, 2 bad usage or a checkpoint that cannot be read;\n"
                                 "check-resume: 0 exact (one line on stdout), 1 the runs differ or a state\n"
                                 "is not stable (a report on stdout), 2 bad usage, a run of COMMAND that\n"
                                 "failed or did not stop at K, or runs that share no checkpoint\n";

static int parse_limit(const char *text, uint64_t *out) {
  char *end;
  unsigned long long v;
  errno = 0;
  v = strtoull(text, &end, 10);
  if (*text == '-' || *text == '\0' || *end != '\0' || errno == ERANGE) return 1;
  *out = v == 0 ? UINT64_MAX : (uint64_t)v;
  return 0;
}

/* ---- main ----------------------------------------------------------------- */

/* "dir/" and "dir" name the same checkpoints: the prefixes built from the
 * directory must compare equal to the state file's. @return `arg`, or
 * *copy (to free) without its trailing slashes; NULL when out of memory. */
static const char *strip_dir_slashes(const char *arg, char **copy) {
  for (size_t len = strlen(arg); len > 1 && arg[len - 1] == '/' && is_directory(arg); len--) {
    if (*copy == NULL && (*copy = join(arg, "", "")) == NULL) return NULL;
    (*copy)[len - 1] = '\0';
    arg = *copy;
  }
  return arg;
}

int main(int argc, char **argv) {
  const char *args[3];
  int nargs = 0, wanted;
  uint64_t limit = DEFAULT_LIMIT;
  int finite = 0;
  const char *cmd;
  char *path_copy[2] = {NULL, NULL};
  hk_env env;
  int rc;

  hk_env_init(&env, HK_ENV_VERSION);
  env.log = log_sink;
  env.log_level = HK_LOG_WARNING;
  /* Its command's arguments are the program's: --help among them is not ours. */
  if (argc >= 2 && strcmp(argv[1], "check-resume") == 0) return cmd_check_resume(&env, argc - 2, argv + 2);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return 0;
    }
    if (strcmp(argv[i], "--version") == 0) {
      printf(TOOL " (hooked %s)\n", hk_version());
      return 0;
    }
  }
  if (argc < 2) {
    fputs(usage_text, stderr);
    return 2;
  }
  cmd = argv[1];
  if (strcmp(cmd, "ls") != 0 && strcmp(cmd, "verify") != 0 && strcmp(cmd, "dump") != 0 && strcmp(cmd, "latest") != 0 &&
      strcmp(cmd, "diff") != 0)
    return usage_error("unknown command '%s'", cmd);
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(cmd, "dump") == 0 && (strcmp(a, "--limit") == 0 || strncmp(a, "--limit=", 8) == 0)) {
      const char *v = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
      if (v == NULL) return usage_error("option '%s' needs a value", "--limit");
      if (parse_limit(v, &limit) != 0) return usage_error("invalid --limit '%s': expected an integer >= 0", v);
      continue;
    }
    if (strcmp(cmd, "verify") == 0 && strcmp(a, "--finite") == 0) {
      finite = 1;
      continue;
    }
    if (a[0] == '-' && a[1] != '\0' && strcmp(a, "--") != 0) return usage_error("unknown option '%s'", a);
    if (strcmp(a, "--") == 0) {
      for (i++; i < argc; i++) {
        if (nargs == 3) return usage_error("too many arguments for '%s'", cmd);
        args[nargs++] = argv[i];
      }
      break;
    }
    if (nargs == 3) return usage_error("too many arguments for '%s'", cmd);
    args[nargs++] = a;
  }
  wanted = strcmp(cmd, "dump") == 0 || strcmp(cmd, "diff") == 0 ? 2 : 1;
  if (nargs != wanted)
    return usage_error(strcmp(cmd, "dump") == 0   ? "'%s' needs FILE and NAME"
                       : strcmp(cmd, "diff") == 0 ? "'%s' needs two checkpoints, A and B"
                                                  : "'%s' needs exactly one path",
                       cmd);

  /* dump's second argument is a tensor name, diff's a path. */
  for (int k = 0; k < (strcmp(cmd, "diff") == 0 ? 2 : 1); k++) {
    if ((args[k] = strip_dir_slashes(args[k], &path_copy[k])) == NULL) {
      free(path_copy[0]);
      out_of_memory();
      return strcmp(cmd, "diff") == 0 ? DIFF_TROUBLE : 1;
    }
  }

  if (strcmp(cmd, "ls") == 0) {
    rc = cmd_ls(&env, args[0]);
  } else if (strcmp(cmd, "verify") == 0) {
    rc = cmd_verify(&env, args[0], finite);
  } else if (strcmp(cmd, "dump") == 0) {
    rc = cmd_dump(&env, args[0], args[1], limit);
  } else if (strcmp(cmd, "diff") == 0) {
    rc = cmd_diff(&env, args[0], args[1]);
  } else {
    rc = cmd_latest(&env, args[0]);
  }
  free(path_copy[0]);
  free(path_copy[1]);
  return rc;
}
