/*
 * hooked::mpi — the stop agreement: every rank stops after the
 * same step.
 *
 * Signals are the hard case: a signal lands at any instant, so a rank that
 * let it stop its own session at once could leave the loop while the others
 * enter the next step's collectives. The hook therefore owns its stop
 * signals (SIGINT and SIGTERM unless the options name others, such as the
 * SIGUSR1 a batch system sends before its time limit): the handler only
 * sets a flag, and the flag takes effect through the agreement at the end
 * of a step, like any other request.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "hooked/coordinator.h"
#include "mpi_internal.h"

/* The signals of hk_signal_set, bit i for known_signals[i]. */
#define NSIGNALS 5
static const int known_signals[NSIGNALS] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
#define ALL_SIGNALS (HK_SIGNAL_INT | HK_SIGNAL_TERM | HK_SIGNAL_HUP | HK_SIGNAL_USR1 | HK_SIGNAL_USR2)

/* The process-wide signal state: one stop hook handles signals at a time. */
static volatile sig_atomic_t g_signal; /* the first signal received, or 0 */
static atomic_int g_installed;         /* a stop hook owns the handlers */
static unsigned g_mask;                /* the signals it handles (set before the handlers) */
static struct sigaction g_old[NSIGNALS];

static void restore_handlers(void) {
  for (int i = 0; i < NSIGNALS; i++)
    if (g_mask & (1u << i)) sigaction(known_signals[i], &g_old[i], NULL);
}

static void on_signal(int sig) {
  if (g_signal) { /* the second one: as without hooked */
    restore_handlers();
    raise(sig);
    return;
  }
  g_signal = sig;
}

/* In the agreement a rank's wish is 0 (go on), 1 (stop) or, for a signal,
 * SIGNAL_WISH + its number: MAXLOC then tells every rank that a signal
 * stops the job, which, and on which rank. */
#define SIGNAL_WISH 1000

#define STOP_MAGIC 0x53544f50u /* "STOP" */
#define STOP_HOOK_NAME "MpiStopHook"

typedef struct stop_hook {
  uint32_t magic;
  hk_mpi *mpi;
  hk_env env;
  int handle_signals;
  unsigned signals; /* the hk_signal_set it handles */
  int installed;    /* this hook installed the handlers */
  int checked;      /* the handlers were found in place after the start */
  int logged;
  atomic_int requested;
  hk_coordinator *coord;
} stop_hook;

static void uninstall(stop_hook *h) {
  if (!h->installed) return;
  restore_handlers();
  h->installed = 0;
  atomic_store(&g_installed, 0);
}

/* hooked's own helper would stop this rank alone: refuse it. */
static hk_code refuse_helper(hk_status *st) {
  hk_status probe = HK_STATUS_INIT;
  hk_code rc = hk_signal_install(&probe);
  if (rc == HK_OK) {
    hk_signal_uninstall(NULL);
    return HK_OK;
  }
  if (rc != HK_FAILED_PRECONDITION) return HK_OK;
  return hk_status_set(st, HK_FAILED_PRECONDITION,
                       "MPI stop hook: hooked's signal helper (hk_signal_install()) is installed; a signal would stop "
                       "this rank alone and leave the others in a collective: uninstall it and let the stop hook "
                       "handle signals");
}

/* Take the hook's signals unless another stop hook has them. */
static hk_code install(stop_hook *h, hk_status *st) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&g_installed, &expected, 1))
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "MPI stop hook: another stop hook already handles signals in this process");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  g_signal = 0;
  g_mask = 0;
  for (int i = 0; i < NSIGNALS; i++) {
    if (!(h->signals & (1u << i))) continue;
    if (sigaction(known_signals[i], &sa, &g_old[i]) != 0) {
      restore_handlers();
      g_mask = 0;
      atomic_store(&g_installed, 0);
      return hk_status_set(st, HK_INTERNAL, "MPI stop hook: sigaction(%s) failed", hk_signal_name(known_signals[i]));
    }
    g_mask |= 1u << i;
  }
  h->installed = 1;
  return HK_OK;
}

/* The handlers are installed at the hook's creation, so a signal during
 * the program's start-up (loading data, building the model, creating the
 * session) is a stop like any other, agreed on at the session's start; if
 * end() removed them, begin() installs them again. */
static hk_code stop_begin(void *user, hk_executor *graph, hk_status *st) {
  stop_hook *h = user;
  (void)graph;
  h->checked = 0;
  h->logged = 0;
  if (!h->handle_signals) return HK_OK;
  hk_code rc = refuse_helper(st);
  if (rc != HK_OK || h->installed) return rc;
  return install(h, st);
}

/* One agreement: does any rank want to stop? On a yes every rank requests
 * a stop — with the reason "signal" when a signal asked, naming it — and
 * the first time logs which rank asked. */
static hk_code agree(stop_hook *h, int mine, const char *when, int *any, int *sig, hk_status *st) {
  hk_mpi *m = h->mpi;
  int in[2] = {mine, m->rank}, outv[2] = {0, 0};
  MPI_Request req = MPI_REQUEST_NULL;
  hk_code rc = hk__mpi_collective_begin(m, HK__MPI_OP_STOP_AGREEMENT, "MPI stop hook", st);
  if (rc != HK_OK) return rc;
  int err = MPI_Iallreduce(in, outv, 1, MPI_2INT, MPI_MAXLOC, m->comm, &req);
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "MPI stop hook: MPI_Iallreduce");
  if ((rc = hk__mpi_collective_wait(m, &req, HK__MPI_OP_STOP_AGREEMENT, "MPI stop hook", st)) != HK_OK) return rc;
  *any = outv[0] != 0;
  *sig = outv[0] > SIGNAL_WISH ? outv[0] - SIGNAL_WISH : 0;
  if (outv[0] && !h->logged) {
    h->logged = 1;
    if (*sig)
      hk_env_log(&h->env, HK_LOG_INFO, "Rank %d asked to stop (%s); every rank stops %s.", outv[1],
                 hk_signal_name(*sig), when);
    else
      hk_env_log(&h->env, HK_LOG_INFO, "Rank %d asked to stop; every rank stops %s.", outv[1], when);
  }
  return HK_OK;
}

/* This rank's wish for the agreement (see SIGNAL_WISH). */
static int wish(stop_hook *h, int requested) {
  const int sig = g_signal;
  if (sig) return SIGNAL_WISH + sig;
  return requested || atomic_load(&h->requested) || (h->coord && hk_coordinator_should_stop(h->coord));
}

/* The start-time agreement: a stop requested at creation on one rank — the
 * host loop's StopAtStep deciding on a chief restored at its last step,
 * before the broadcast has given the workers that step — stops every rank
 * before its first step, so no rank enters a step's collectives alone. */
static hk_code stop_after_create_session(void *user, hk_raw_session *rs, hk_coordinator *coord,
                                         hk_creation_context *ctx, hk_status *st) {
  stop_hook *h = user;
  h->coord = coord;
  /* The step a deadline's message names: the global step now (the
   * chief's, after the broadcast) for the start's agreement, then the
   * step in progress: one more after each agreement. */
  int64_t gs = HK_UNSET_STEPS;
  hk_status ignore = HK_STATUS_INIT;
  if (hk_raw_session_global_step(&gs, rs, &ignore) != HK_OK) gs = HK_UNSET_STEPS;
  hk__mpi_set_step(h->mpi, gs);
  int any = 0, sig = 0;
  hk_code rc = agree(h, wish(h, hk_creation_context_stop_requested(ctx)), "before its next step", &any, &sig, st);
  if (gs != HK_UNSET_STEPS) h->mpi->step = gs + 1;
  if (rc == HK_OK && sig)
    hk_creation_context_request_stop_with_reason(ctx, HK_STOP_SIGNAL, hk_signal_name(sig));
  else if (rc == HK_OK && any)
    hk_creation_context_request_stop(ctx);
  return rc;
}

/* After the start, the handlers must still be ours: a host loop with
 * handle_signals, say, installs hooked's helper after the hooks' begin(). */
static hk_code check_handlers(stop_hook *h, hk_status *st) {
  h->checked = 1;
  if (!h->installed) return HK_OK;
  for (int i = 0; i < NSIGNALS; i++) {
    struct sigaction cur;
    if (!(g_mask & (1u << i)) || sigaction(known_signals[i], NULL, &cur) != 0 || cur.sa_handler == on_signal) continue;
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "MPI stop hook: %s's handler was replaced after the hook installed its own (a host loop "
                         "with handle_signals 1, or hk_signal_install()?): a signal would stop this rank alone; create "
                         "the loop with handle_signals = 0",
                         hk_signal_name(known_signals[i]));
  }
  return HK_OK;
}

static hk_code stop_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *st) {
  stop_hook *h = user;
  (void)values;
  if (!h->checked) {
    hk_code rc = check_handlers(h, st);
    if (rc != HK_OK) return rc;
  }
  int any = 0, sig = 0;
  hk_code rc = agree(h, wish(h, hk_run_context_stop_requested(ctx)), "after this step", &any, &sig, st);
  if (h->mpi->step != HK_UNSET_STEPS) h->mpi->step++;
  if (rc == HK_OK && sig)
    hk_run_context_request_stop_with_reason(ctx, HK_STOP_SIGNAL, hk_signal_name(sig));
  else if (rc == HK_OK && any)
    hk_run_context_request_stop(ctx);
  return rc;
}

static hk_code stop_end(void *user, hk_raw_session *rs, hk_status *st) {
  (void)rs, (void)st;
  uninstall(user);
  return HK_OK;
}

static void stop_destroy(void *user) {
  stop_hook *h = user;
  uninstall(h);
  hk_env env = h->env;
  h->magic = 0;
  hk_env_free(&env, h);
}

static const hk_hook_vtable stop_vtable = {
    .version = HK_HOOK_VTABLE_VERSION,
    .begin = stop_begin,
    .after_create_session = stop_after_create_session,
    .after_run = stop_after_run,
    .end = stop_end,
    .destroy = stop_destroy,
};

static const hk_mpi_stop_options default_stop = HK_MPI_STOP_OPTIONS_INIT;

hk_code hk_mpi_stop_options_init(hk_mpi_stop_options *opts, uint32_t version) {
  return hk_struct_init(opts, sizeof(hk_mpi_stop_options), &(const hk_mpi_stop_options)HK_MPI_STOP_OPTIONS_INIT,
                        version);
}

hk_code hk_mpi_stop_hook_new(hk_hook **out, hk_mpi *mpi, const hk_mpi_stop_options *opts, hk_status *st) {
  if (out) *out = NULL;
  if (!out || !mpi)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_stop_hook_new: %s is NULL", !out ? "out" : "mpi");
  const hk_mpi_stop_options *o = opts ? opts : &default_stop;
  if (hk_struct_check_version(o, HK_MPI_STOP_OPTIONS_VERSION, "hk_mpi_stop_options", "hk_mpi_stop_hook_new: opts",
                              st) != HK_OK)
    return HK_INVALID_ARGUMENT;
  hk_code rc = hk_env_check(o->env, "hk_mpi_stop_hook_new: env", st);
  if (rc != HK_OK) return rc;
  if (o->stop_signals & ~(unsigned)ALL_SIGNALS)
    return hk_status_set(
        st, HK_INVALID_ARGUMENT,
        "hk_mpi_stop_hook_new: opts->stop_signals 0x%x has bits 0x%x that name no hk_signal_set signal",
        o->stop_signals, o->stop_signals & ~(unsigned)ALL_SIGNALS);
  if (o->stop_signals && !o->handle_signals)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_mpi_stop_hook_new: opts->stop_signals is given but handle_signals is 0 (the hook installs "
                         "no handler)");
  const hk_env *env = o->env ? o->env : &mpi->env;
  stop_hook *h = hk_env_calloc(env, 1, sizeof *h);
  if (!h) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_stop_hook_new: out of memory");
  h->magic = STOP_MAGIC;
  h->mpi = mpi;
  hk_env_copy(&h->env, env);
  /* Its lines name the rank, also through an env of the program's. */
  if (o->env && (rc = hk__mpi_log_wrap(mpi, &h->env, o->env, st)) != HK_OK) {
    hk_env_free(env, h);
    return rc;
  }
  h->handle_signals = o->handle_signals != 0;
  h->signals = o->stop_signals ? o->stop_signals : HK_SIGNAL_DEFAULT_SET;
  atomic_init(&h->requested, 0);
  rc = hk_hook_new(out, &stop_vtable, h, STOP_HOOK_NAME, env, st);
  if (rc != HK_OK) return rc;
  /* Signals are a stop from now on, when nothing else holds them; otherwise
   * begin() reports why. */
  hk_status ignore = HK_STATUS_INIT;
  if (h->handle_signals && refuse_helper(&ignore) == HK_OK) install(h, &ignore);
  return HK_OK;
}

void hk_mpi_stop_hook_request(hk_hook *hook) {
  if (!hook) return;
  /* The name first: another kind of hook's user data is not ours to read. */
  const char *name = hk_hook_name(hook);
  if (!name || strcmp(name, STOP_HOOK_NAME) != 0) return;
  stop_hook *h = hk_hook_user(hook);
  if (h && h->magic == STOP_MAGIC) atomic_store(&h->requested, 1);
}
