/*
 * hooked-ckpt check-resume — the runs: the program started with its
 * checkpoint directory in place of {dir} and HOOKED_CHECK_RESUME in its
 * environment, its output into a log file per run; the work directory; the
 * checkpoints a run left; the report files in which the library names
 * states whose two reads differ. POSIX (fork, exec, wait, directories) and
 * hooked's public checkpoint reader.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "check_resume.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define TAIL_LINES 20
#define TAIL_BYTES 65536
#define MAX_DEPTH 4 /* {dir} and three levels below it */

static int oom(void) {
  out_of_memory();
  return CR_TROUBLE;
}

/* ---- signals ---------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;
static volatile sig_atomic_t child; /* the run in progress, 0: none */

/* The terminal sends SIGINT to the whole process group; a SIGTERM sent to
 * the tool alone is passed on, so the run ends either way. */
static void on_signal(int sig) {
  interrupted = 1;
  if (child > 0) kill((pid_t)child, sig);
}

void runs_handle_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

int runs_interrupted(void) { return interrupted != 0; }

/* ---- the work directory ------------------------------------------------------- */

static int is_empty_dir(const char *path) {
  DIR *d = opendir(path);
  struct dirent *e;
  int empty = 1;
  if (d == NULL) return 0;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = 0;
  closedir(d);
  return empty;
}

char *make_work_dir(const char *given, int *made) {
  char *path;
  *made = 0;
  if (given != NULL) {
    if (mkdir(given, 0777) == 0) {
      *made = 1;
    } else if (errno != EEXIST || !is_directory(given) || !is_empty_dir(given)) {
      fprintf(stderr, TOOL ": check-resume: --work-dir %s: %s\n", given,
              errno == EEXIST ? "exists and is not an empty directory" : strerror(errno));
      return NULL;
    }
    if ((path = join(given, "", "")) == NULL) out_of_memory();
    return path;
  }
  {
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
    if ((path = join(tmp, "/hooked-check-resume.", "XXXXXX")) == NULL) {
      out_of_memory();
      return NULL;
    }
    if (mkdtemp(path) == NULL) {
      fprintf(stderr, TOOL ": check-resume: cannot make a work directory under %s: %s\n", tmp, strerror(errno));
      free(path);
      return NULL;
    }
    *made = 1;
    return path;
  }
}

void remove_tree(const char *path, int keep_top) {
  struct stat s;
  DIR *d;
  struct dirent *e;
  if (lstat(path, &s) != 0) return;
  if (!S_ISDIR(s.st_mode)) {
    unlink(path);
    return;
  }
  if ((d = opendir(path)) != NULL) {
    while ((e = readdir(d)) != NULL) {
      char *sub;
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      if ((sub = join(path, "/", e->d_name)) == NULL) continue;
      remove_tree(sub, 0);
      free(sub);
    }
    closedir(d);
  }
  if (!keep_top) rmdir(path);
}

int run_init(run *r, const char *work, const char *label, const char *dir) {
  char *reports = join(work, "/", "reports");
  memset(r, 0, sizeof *r);
  r->label = label;
  r->dir = join(work, "/", dir);
  r->log = join(work, "/", label);
  r->report = reports != NULL ? join(reports, "/", label) : NULL;
  if (r->log != NULL) {
    char *log = join(r->log, ".log", "");
    free(r->log);
    r->log = log;
  }
  if (reports == NULL || r->dir == NULL || r->log == NULL || r->report == NULL) {
    free(reports);
    return oom();
  }
  if ((mkdir(reports, 0777) != 0 && errno != EEXIST) || (mkdir(r->dir, 0777) != 0 && errno != EEXIST) ||
      mkdir(r->report, 0777) != 0) {
    fprintf(stderr, TOOL ": check-resume: cannot make the directories of the %s run under %s: %s\n", label, work,
            strerror(errno));
    free(reports);
    return CR_TROUBLE;
  }
  free(reports);
  return 0;
}

void run_free(run *r) {
  free(r->dir);
  free(r->log);
  free(r->report);
  memset(r, 0, sizeof *r);
}

/* ---- running the program ------------------------------------------------------- */

/* `arg` with every {dir} made `dir` (malloc); NULL when out of memory. */
static char *substitute(const char *arg, const char *dir) {
  size_t n = 0, k = strlen(DIR_PLACEHOLDER), dl = strlen(dir);
  const char *p;
  char *out, *q;
  for (p = arg; (p = strstr(p, DIR_PLACEHOLDER)) != NULL; p += k) n++;
  out = malloc(strlen(arg) + n * dl + 1);
  if (out == NULL) return NULL;
  for (p = arg, q = out; *p;) {
    if (strncmp(p, DIR_PLACEHOLDER, k) == 0) {
      memcpy(q, dir, dl);
      q += dl;
      p += k;
    } else {
      *q++ = *p++;
    }
  }
  *q = '\0';
  return out;
}

/* In the child: stdin from /dev/null, stdout and stderr into the log, the
 * variable set, then the program. Never returns. */
static void exec_child(char **argv, const char *log, const char *var) {
  int in = open("/dev/null", O_RDONLY), out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0666);
  if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) _exit(127);
  if (var != NULL ? setenv(CHECK_RESUME_VAR, var, 1) != 0 : unsetenv(CHECK_RESUME_VAR) != 0) _exit(127);
  execvp(argv[0], argv);
  fprintf(stderr, TOOL ": check-resume: cannot run '%s': %s\n", argv[0], strerror(errno));
  _exit(127);
}

/* Quote `s` for a shell when it needs it, into stderr. */
static void print_quoted(const char *s) {
  if (s[0] != '\0' && strpbrk(s, " \t\n'\"\\$`*?[]{}();&|<>~#!") == NULL) {
    fputs(s, stderr);
    return;
  }
  fputc('\'', stderr);
  for (; *s; s++) {
    if (*s == '\'')
      fputs("'\\''", stderr);
    else
      fputc(*s, stderr);
  }
  fputc('\'', stderr);
}

void print_log_tail(const run *r) {
  FILE *f = fopen(r->log, "rb");
  char *buf;
  long size, start;
  size_t n, lines = 0, from;
  if (f == NULL) return;
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  start = size > TAIL_BYTES ? size - TAIL_BYTES : 0;
  buf = malloc(TAIL_BYTES + 1);
  if (buf == NULL || size < 0 || fseek(f, start, SEEK_SET) != 0) {
    free(buf);
    fclose(f);
    return;
  }
  n = fread(buf, 1, TAIL_BYTES, f);
  fclose(f);
  buf[n] = '\0';
  from = n;
  if (from > 0 && buf[from - 1] == '\n') from--;
  while (from > 0 && lines < TAIL_LINES) {
    if (buf[from - 1] == '\n') lines++;
    if (lines < TAIL_LINES) from--;
  }
  if (n == 0) {
    fprintf(stderr, "--- its output (%s) is empty\n", r->log);
  } else {
    fprintf(stderr, "--- the end of its output (%s):\n%s%s", r->log, buf + from, buf[n - 1] == '\n' ? "" : "\n");
    fprintf(stderr, "---\n");
  }
  free(buf);
}

int run_program(const run *r, char *const *args, size_t nargs, const char *var, const char *what) {
  char **argv = calloc(nargs + 1, sizeof *argv);
  pid_t pid;
  int status = 0, rc = CR_TROUBLE;
  size_t i;

  if (argv == NULL) return oom();
  for (i = 0; i < nargs; i++)
    if ((argv[i] = substitute(args[i], r->dir)) == NULL) break;
  if (i < nargs) {
    out_of_memory();
    goto out;
  }
  fprintf(stderr, TOOL ": check-resume: %s ...\n", what);
  fflush(NULL);
  pid = fork();
  if (pid < 0) {
    fprintf(stderr, TOOL ": check-resume: cannot start the %s run: fork: %s\n", r->label, strerror(errno));
    goto out;
  }
  if (pid == 0) exec_child(argv, r->log, var);
  child = (sig_atomic_t)pid;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      fprintf(stderr, TOOL ": check-resume: waiting for the %s run: %s\n", r->label, strerror(errno));
      child = 0;
      goto out;
    }
  }
  child = 0;
  if (interrupted) {
    fprintf(stderr, TOOL ": check-resume: interrupted during the %s run\n", r->label);
    goto out;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    rc = 0;
    goto out;
  }
  fprintf(stderr, TOOL ": check-resume: the %s run ", r->label);
  if (WIFEXITED(status))
    fprintf(stderr, "failed with exit status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    fprintf(stderr, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    fprintf(stderr, "ended with wait status %d", status);
  fprintf(stderr, ":");
  for (i = 0; i < nargs; i++) {
    fputc(' ', stderr);
    print_quoted(argv[i]);
  }
  fprintf(stderr, "\n");
  print_log_tail(r);
out:
  for (i = 0; i < nargs; i++) free(argv[i]);
  free(argv);
  return rc;
}

/* ---- the checkpoints of a run --------------------------------------------------- */

static int add_checkpoint(ckpt_set *s, ckpt_file *f) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 32;
    ckpt_file *p = realloc(s->f, cap * sizeof *p);
    if (p == NULL) return 1;
    s->f = p;
    s->cap = cap;
  }
  s->f[s->n++] = *f;
  return 0;
}

/* Visit directory `rel` (relative to `root`, "" for the root itself). */
static int scan(const hk_env *env, const char *root, const char *rel, int depth, ckpt_set *s) {
  char *path = rel[0] ? join(root, "/", rel) : join(root, "", "");
  DIR *d;
  struct dirent *e;
  int rc = 0;

  if (path == NULL) return oom();
  if ((d = opendir(path)) == NULL) {
    fprintf(stderr, TOOL ": check-resume: %s: %s\n", path, strerror(errno));
    free(path);
    return CR_TROUBLE;
  }
  while (rc == 0 && (e = readdir(d)) != NULL) {
    char *sub, *subrel;
    struct stat st;
    if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0'))) continue;
    sub = join(path, "/", e->d_name);
    subrel = rel[0] ? join(rel, "/", e->d_name) : join(e->d_name, "", "");
    if (sub == NULL || subrel == NULL) {
      rc = oom();
    } else if (lstat(sub, &st) != 0) {
      /* gone since the listing: nothing to compare */
    } else if (S_ISDIR(st.st_mode)) {
      if (depth + 1 < MAX_DEPTH) rc = scan(env, root, subrel, depth + 1, s);
    } else if (S_ISREG(st.st_mode) && scan_name_step(e->d_name) >= 0) {
      hk_status hs = HK_STATUS_INIT;
      hk_checkpoint_reader *r = NULL;
      ckpt_file f;
      memset(&f, 0, sizeof f);
      sub[strlen(sub) - strlen(DATA_SUFFIX)] = '\0';
      if (hk_checkpoint_reader_open(&r, env, sub, &hs) != HK_OK) {
        problem(sub, &hs);
        rc = CR_TROUBLE;
      } else {
        size_t klen = strlen(subrel) - strlen(DATA_SUFFIX);
        f.step = hk_checkpoint_reader_step(r);
        f.ino = (unsigned long long)st.st_ino;
        f.size = (unsigned long long)st.st_size;
        f.mtime_ns = (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec;
        while (klen > 0 && subrel[klen - 1] != '-') klen--; /* "<key>-<digits>" */
        subrel[klen > 0 ? klen - 1 : 0] = '\0';
        f.key = subrel;
        f.prefix = sub;
        subrel = sub = NULL;
        if (add_checkpoint(s, &f) != 0) {
          free(f.key);
          free(f.prefix);
          rc = oom();
        }
      }
      hk_checkpoint_reader_free(r);
    }
    free(sub);
    free(subrel);
  }
  closedir(d);
  free(path);
  return rc;
}

static int by_step(const void *pa, const void *pb) {
  const ckpt_file *a = pa, *b = pb;
  if (a->step != b->step) return a->step < b->step ? -1 : 1;
  return strcmp(a->key, b->key);
}

int list_checkpoints(const hk_env *env, const char *dir, ckpt_set *out) {
  int rc;
  memset(out, 0, sizeof *out);
  rc = scan(env, dir, "", 0, out);
  if (rc == 0 && out->n > 1) qsort(out->f, out->n, sizeof *out->f, by_step);
  return rc;
}

void free_checkpoints(ckpt_set *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->f[i].key);
    free(s->f[i].prefix);
  }
  free(s->f);
  memset(s, 0, sizeof *s);
}

const ckpt_file *find_checkpoint(const ckpt_set *s, const char *key, int64_t step) {
  for (size_t i = 0; i < s->n; i++)
    if (s->f[i].step == step && strcmp(s->f[i].key, key) == 0) return &s->f[i];
  return NULL;
}

/* ---- the library's reports ------------------------------------------------------ */

/* "<key> <value>\n" lines: the value of `key`, or NULL. */
static char *field(const char *text, const char *key) {
  size_t k = strlen(key);
  for (const char *p = text; *p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > k && strncmp(p, key, k) == 0 && p[k] == ' ') {
      char *v = malloc(len - k);
      if (v != NULL) {
        memcpy(v, p + k + 1, len - k - 1);
        v[len - k - 1] = '\0';
      }
      return v;
    }
    p += len + (end != NULL);
  }
  return NULL;
}

static int add_unstable(unstable_list *list, const char *label, const char *text) {
  char *name = field(text, "state"), *bytes = field(text, "bytes"), *size = field(text, "size");
  unstable *u = NULL;
  int rc = 0;
  if (name == NULL) goto out; /* not a report of a state */
  for (size_t i = 0; i < list->n; i++)
    if (strcmp(list->u[i].name, name) == 0) u = &list->u[i];
  if (u != NULL) {
    if (strstr(u->runs, label) == NULL) {
      char *runs = join(u->runs, ", ", label);
      if (runs == NULL) goto oom;
      free(u->runs);
      u->runs = runs;
    }
    goto out;
  }
  if (list->n == list->cap) {
    size_t cap = list->cap ? list->cap * 2 : 4;
    unstable *p = realloc(list->u, cap * sizeof *p);
    if (p == NULL) goto oom;
    list->u = p;
    list->cap = cap;
  }
  u = &list->u[list->n];
  memset(u, 0, sizeof *u);
  if ((u->runs = join(label, "", "")) == NULL) goto oom;
  u->name = name;
  u->bytes = bytes;
  u->size = size != NULL ? strtoull(size, NULL, 10) : 0;
  name = bytes = NULL;
  list->n++;
  goto out;
oom:
  rc = oom();
out:
  free(name);
  free(bytes);
  free(size);
  return rc;
}

int read_reports(const run *r, unstable_list *list) {
  DIR *d = opendir(r->report);
  struct dirent *e;
  int rc = 0;
  if (d == NULL) {
    fprintf(stderr, TOOL ": check-resume: %s: %s\n", r->report, strerror(errno));
    return CR_TROUBLE;
  }
  while (rc == 0 && (e = readdir(d)) != NULL) {
    char *path, text[4096];
    size_t n;
    FILE *f;
    if (strncmp(e->d_name, "unstable-", 9) != 0) continue;
    if ((path = join(r->report, "/", e->d_name)) == NULL) {
      rc = oom();
      break;
    }
    f = fopen(path, "rb");
    if (f == NULL) {
      fprintf(stderr, TOOL ": check-resume: %s: %s\n", path, strerror(errno));
      rc = CR_TROUBLE;
    } else {
      n = fread(text, 1, sizeof text - 1, f);
      text[n] = '\0';
      fclose(f);
      rc = add_unstable(list, r->label, text);
    }
    free(path);
  }
  closedir(d);
  return rc;
}

void free_unstable(unstable_list *list) {
  for (size_t i = 0; i < list->n; i++) {
    free(list->u[i].name);
    free(list->u[i].bytes);
    free(list->u[i].runs);
  }
  free(list->u);
  memset(list, 0, sizeof *list);
}
