/*
 * hooked — the opt-in signal helper: a signal is a clean stop.
 *
 * This file holds the library's only process-wide mutable state: signal
 * dispositions are process-wide, so the record of what we replaced has to be
 * too. The handler does nothing but store to lock-free atomic ints (C11
 * allows those in handlers, and unlike a plain volatile sig_atomic_t they
 * are also race-free for the other threads that poll the flag), and call
 * sigaction() and raise(), which are async-signal-safe.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/coordinator.h"

#include <signal.h>

#if defined(__unix__) || defined(__unix) || (defined(__APPLE__) && defined(__MACH__))
#define HK__HAVE_SIGACTION 1
#endif

#ifdef HK__HAVE_SIGACTION

#include <pthread.h>
#include <string.h>

#if !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
#endif
#if !defined(__STDC_NO_ATOMICS__) && ATOMIC_INT_LOCK_FREE == 2
typedef atomic_int signal_flag;
#define FLAG_GET(f) atomic_load(&(f))
#define FLAG_SET(f, v) atomic_store(&(f), (v))
#else
typedef volatile sig_atomic_t signal_flag;
#define FLAG_GET(f) ((int)(f))
#define FLAG_SET(f, v) ((f) = (v))
#endif

/* Install and uninstall are "not meant to race", but a mutex costs nothing
 * and keeps the saved dispositions consistent if they do. */
static pthread_mutex_t signal_lock = PTHREAD_MUTEX_INITIALIZER;
static int signal_installed;

/* Index 0: SIGINT, 1: SIGTERM. */
static const int handled_signals[2] = {SIGINT, SIGTERM};
static struct sigaction previous_actions[2];
static signal_flag received[2];
static signal_flag fired_signal;

static int signal_index(int sig) { return sig == SIGINT ? 0 : (sig == SIGTERM ? 1 : -1); }

static void on_signal(int sig) {
  int i = signal_index(sig);

  if (i < 0) return;
  if (FLAG_GET(received[i])) {
    /* Second delivery: behave as if hooked were not there. The signal is
     * blocked while this handler runs, so the re-raised one is delivered
     * with the restored disposition as soon as we return. */
    sigaction(sig, &previous_actions[i], NULL);
    raise(sig);
    return;
  }
  FLAG_SET(received[i], 1);
  if (FLAG_GET(fired_signal) == 0) FLAG_SET(fired_signal, sig);
}

hk_code hk_signal_install(hk_status *status) {
  struct sigaction action;
  int i;

  pthread_mutex_lock(&signal_lock);
  if (signal_installed) {
    pthread_mutex_unlock(&signal_lock);
    return hk_status_set(status, HK_FAILED_PRECONDITION,
                         "signal helper: already installed (call hk_signal_uninstall first)");
  }
  FLAG_SET(received[0], 0);
  FLAG_SET(received[1], 0);
  FLAG_SET(fired_signal, 0);

  memset(&action, 0, sizeof(action));
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  /* Restart interrupted system calls: the flag is polled, so nothing needs
   * an EINTR to notice it. */
  action.sa_flags = SA_RESTART;
  for (i = 0; i < 2; i++) {
    if (sigaction(handled_signals[i], &action, &previous_actions[i]) != 0) {
      int j;
      for (j = 0; j < i; j++) sigaction(handled_signals[j], &previous_actions[j], NULL);
      pthread_mutex_unlock(&signal_lock);
      return hk_status_set(status, HK_INTERNAL, "signal helper: sigaction(%s) failed",
                           handled_signals[i] == SIGINT ? "SIGINT" : "SIGTERM");
    }
  }
  signal_installed = 1;
  pthread_mutex_unlock(&signal_lock);
  hk_status_clear(status);
  return HK_OK;
}

hk_code hk_signal_uninstall(hk_status *status) {
  int i;

  pthread_mutex_lock(&signal_lock);
  if (!signal_installed) {
    pthread_mutex_unlock(&signal_lock);
    return hk_status_set(status, HK_FAILED_PRECONDITION, "signal helper: not installed");
  }
  for (i = 0; i < 2; i++) sigaction(handled_signals[i], &previous_actions[i], NULL);
  FLAG_SET(received[0], 0);
  FLAG_SET(received[1], 0);
  FLAG_SET(fired_signal, 0);
  signal_installed = 0;
  pthread_mutex_unlock(&signal_lock);
  hk_status_clear(status);
  return HK_OK;
}

int hk_signal_fired(void) { return FLAG_GET(fired_signal); }

#else /* !HK__HAVE_SIGACTION */

hk_code hk_signal_install(hk_status *status) {
  return hk_status_set(status, HK_UNIMPLEMENTED, "signal helper: POSIX signals are not available");
}

hk_code hk_signal_uninstall(hk_status *status) {
  return hk_status_set(status, HK_UNIMPLEMENTED, "signal helper: POSIX signals are not available");
}

int hk_signal_fired(void) { return 0; }

#endif /* HK__HAVE_SIGACTION */
