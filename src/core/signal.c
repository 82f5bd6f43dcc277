/*
 * hooked — the opt-in signal helper: a signal is a clean stop, for a
 * configurable set of stop signals.
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

/* Every signal the helper can handle, in the order of hk_signal_set's bits;
 * 0 where the platform lacks it. */
#define NSIGNALS 5
static const int known_signals[NSIGNALS] = {SIGINT, SIGTERM,
#ifdef SIGHUP
                                            SIGHUP,
#else
                                            0,
#endif
#ifdef SIGUSR1
                                            SIGUSR1,
#else
                                            0,
#endif
#ifdef SIGUSR2
                                            SIGUSR2
#else
                                            0
#endif
};
static const char *const known_names[NSIGNALS] = {"SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2"};
/* The installed set; read by the handler, written under the lock while no
 * handler of ours is installed. */
static signal_flag installed_mask;
static struct sigaction previous_actions[NSIGNALS];
static signal_flag received[NSIGNALS];
static signal_flag fired_signal;

static int signal_index(int sig) {
  for (int i = 0; i < NSIGNALS; i++)
    if (known_signals[i] != 0 && known_signals[i] == sig) return i;
  return -1;
}

static void on_signal(int sig) {
  int i = signal_index(sig);

  if (i < 0 || !(FLAG_GET(installed_mask) & (1 << i))) return;
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

static void clear_flags(void) {
  for (int i = 0; i < NSIGNALS; i++) FLAG_SET(received[i], 0);
  FLAG_SET(fired_signal, 0);
}

hk_code hk_signal_install_set(unsigned signals, hk_status *status) {
  struct sigaction action;
  unsigned all = (1u << NSIGNALS) - 1;

  if (signals == 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "signal helper: the signal set is empty (OR HK_SIGNAL_* bits)");
  if (signals & ~all)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "signal helper: the signal set 0x%x has bits 0x%x that name no hk_signal_set signal", signals,
                         signals & ~all);
  for (int i = 0; i < NSIGNALS; i++)
    if ((signals & (1u << i)) && known_signals[i] == 0)
      return hk_status_set(status, HK_UNIMPLEMENTED, "signal helper: %s does not exist on this platform",
                           known_names[i]);
  pthread_mutex_lock(&signal_lock);
  if (signal_installed) {
    pthread_mutex_unlock(&signal_lock);
    return hk_status_set(status, HK_FAILED_PRECONDITION,
                         "signal helper: already installed (call hk_signal_uninstall first)");
  }
  clear_flags();
  FLAG_SET(installed_mask, (int)signals);

  memset(&action, 0, sizeof(action));
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  /* Restart interrupted system calls: the flag is polled, so nothing needs
   * an EINTR to notice it. */
  action.sa_flags = SA_RESTART;
  for (int i = 0; i < NSIGNALS; i++) {
    if (!(signals & (1u << i))) continue;
    if (sigaction(known_signals[i], &action, &previous_actions[i]) != 0) {
      for (int j = 0; j < i; j++)
        if (signals & (1u << j)) sigaction(known_signals[j], &previous_actions[j], NULL);
      FLAG_SET(installed_mask, 0);
      pthread_mutex_unlock(&signal_lock);
      return hk_status_set(status, HK_INTERNAL, "signal helper: sigaction(%s) failed", known_names[i]);
    }
  }
  signal_installed = 1;
  pthread_mutex_unlock(&signal_lock);
  hk_status_clear(status);
  return HK_OK;
}

hk_code hk_signal_install(hk_status *status) { return hk_signal_install_set(HK_SIGNAL_DEFAULT_SET, status); }

hk_code hk_signal_uninstall(hk_status *status) {
  pthread_mutex_lock(&signal_lock);
  if (!signal_installed) {
    pthread_mutex_unlock(&signal_lock);
    return hk_status_set(status, HK_FAILED_PRECONDITION, "signal helper: not installed");
  }
  unsigned mask = (unsigned)FLAG_GET(installed_mask);
  for (int i = 0; i < NSIGNALS; i++)
    if (mask & (1u << i)) sigaction(known_signals[i], &previous_actions[i], NULL);
  FLAG_SET(installed_mask, 0);
  clear_flags();
  signal_installed = 0;
  pthread_mutex_unlock(&signal_lock);
  hk_status_clear(status);
  return HK_OK;
}

int hk_signal_fired(void) { return FLAG_GET(fired_signal); }

const char *hk_signal_name(int sig) {
  int i = signal_index(sig);
  return i < 0 ? "signal" : known_names[i];
}

#else /* !HK__HAVE_SIGACTION */

hk_code hk_signal_install(hk_status *status) {
  return hk_status_set(status, HK_UNIMPLEMENTED, "signal helper: POSIX signals are not available");
}

hk_code hk_signal_uninstall(hk_status *status) {
  return hk_status_set(status, HK_UNIMPLEMENTED, "signal helper: POSIX signals are not available");
}

int hk_signal_fired(void) { return 0; }

hk_code hk_signal_install_set(unsigned signals, hk_status *status) {
  (void)signals;
  return hk_signal_install(status);
}

const char *hk_signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal";
}

#endif /* HK__HAVE_SIGACTION */
