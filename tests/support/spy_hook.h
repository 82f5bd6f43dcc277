/*
 * spy_hook — a configurable hook for tests.
 *
 * A spy_hook wraps an hk_hook (spy->hook) whose slots:
 *   - count their calls (spy->calls[SPY_BEGIN] ...), destroy included;
 *   - append "<name>.<slot>" to a shared, ordered spy_log (several spies can
 *     share one log, so tests can check dispatch order), with the monotonic
 *     time of the hook's env at the call;
 *   - fail on command: spy_hook_fail(spy, slot, nth, count, code, msg) makes
 *     the nth next call of that slot (and `count`-1 more; SPY_FOREVER for all)
 *     return code with msg;
 *   - request a stop on command (before_run / after_run through the run
 *     context, after_create_session through the creation context) at the nth
 *     next call of that slot or at every call (spy_hook_stop_at);
 *   - in before_run hand back the request configured in spy->request
 *     (fetches, feeds, targets, trace_level, timeout_ms) when
 *     spy->request_enabled is set;
 *   - in after_run record what they got: the number of results, copies of
 *     the result tensors' headers, the first 8 bytes of each result as int64
 *     (spy->last_i64[i]; integer scalars are converted), a copy of the
 *     options, the metadata pointer, whether the run context had a stop
 *     requested on entry, and the run context's args / session pointers;
 *   - keep the graph of begin(), the raw session and coordinator of
 *     after_create_session() and the raw session of end();
 *   - finally call spy->action (if set) with the slot and the slot's main
 *     argument (hk_executor*, hk_creation_context*, hk_run_context*, or
 *     hk_raw_session* for end); a non-OK return is the slot's result. The
 *     action runs only if no scripted failure applied.
 *
 * The spy struct is allocated with calloc; the hk_hook is created with the
 * env given to spy_hook_new (NULL: the session's). spy_hook_free() frees the
 * hook (counting destroy) and the spy; spy_hook_release() frees only the
 * hk_hook so a test can check the destroy count before freeing the spy.
 */
#ifndef HOOKED_TEST_SPY_HOOK_H
#define HOOKED_TEST_SPY_HOOK_H

#include <hooked/hooked.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPY_LOG_MAX 512
#define SPY_EVENT_MAX 64
#define SPY_MAX 16
#define SPY_FOREVER (-1)

typedef enum spy_slot {
  SPY_BEGIN = 0,
  SPY_AFTER_CREATE,
  SPY_BEFORE_RUN,
  SPY_AFTER_RUN,
  SPY_END,
  SPY_DESTROY,
  SPY__NSLOTS
} spy_slot;

typedef struct spy_event {
  char name[SPY_EVENT_MAX];
  double time;
} spy_event;

/** A shared ordered event log; zero-initialize it (or spy_log_clear). */
typedef struct spy_log {
  size_t n;
  spy_event events[SPY_LOG_MAX];
} spy_log;

void spy_log_clear(spy_log *log);
/** Append an event (tests may add their own markers). */
void spy_log_add(spy_log *log, const char *event, double time);
/** @return the index of the first event equal to `event` at or after `from`, or -1. */
int spy_log_find(const spy_log *log, const char *event, size_t from);
/** @return how many events equal `event`. */
int spy_log_count(const spy_log *log, const char *event);
/** @return the event at index i ("" when out of range). */
const char *spy_log_at(const spy_log *log, size_t i);
/** @return nonzero when the log is exactly the `n` given events; prints a diff when not. */
int spy_log_equals(const spy_log *log, const char *const *events, size_t n);
void spy_log_dump(const spy_log *log);

typedef struct spy_hook spy_hook;
typedef hk_code (*spy_action_fn)(spy_hook *spy, spy_slot slot, void *arg, hk_status *status);

typedef struct spy_script {
  int active;
  int start;     /* call number (1-based, absolute) of the first affected call */
  int remaining; /* SPY_FOREVER or the number of calls still affected */
  hk_code code;
  char message[HK_STATUS_MESSAGE_MAX];
} spy_script;

struct spy_hook {
  char name[48];
  hk_hook *hook;
  spy_log *log; /* may be NULL */
  int calls[SPY__NSLOTS];

  /* before_run request */
  int request_enabled;
  hk_run_request request; /* arrays below are what the request points at by default */
  hk_handle fetches[SPY_MAX];
  hk_feed feeds[SPY_MAX];
  hk_handle targets[SPY_MAX];
  int64_t feed_values[SPY_MAX]; /* storage for i64 scalar feeds (spy_hook_feed_i64) */

  /* after_run records */
  size_t last_nresults;
  const hk_tensor *last_results_ptr;
  hk_tensor last_results[SPY_MAX];
  int64_t last_i64[SPY_MAX];
  int have_options;
  hk_run_options last_options;
  const hk_run_options *last_options_ptr;
  hk_run_metadata *last_metadata;
  int stop_seen_in_after_run;    /* stop_requested() on entry to the last after_run */
  int stop_seen_in_after_create; /* creation_context_stop_requested() on entry to the last after_create_session */
  const hk_run_args *last_ctx_args;
  hk_raw_session *last_ctx_session;

  /* other records */
  hk_executor *begin_graph;
  hk_raw_session *created_session;
  hk_coordinator *coord;
  hk_raw_session *end_session;

  /* scripting */
  spy_script fail[SPY__NSLOTS];
  spy_script stop[SPY__NSLOTS];
  spy_action_fn action;
  void *action_user;
};

/**
 * Create a spy named `name` (also the hk_hook's name) logging into `log`
 * (may be NULL). `env` is given to hk_hook_new (NULL: the session's).
 * @return NULL only when hk_hook_new fails.
 */
spy_hook *spy_hook_new(const char *name, spy_log *log, const hk_env *env);
/** Free the hk_hook (if not released) and the spy. NULL is a no-op. */
void spy_hook_free(spy_hook *spy);
/** Free only the hk_hook (destroy is counted in spy->calls[SPY_DESTROY]). */
void spy_hook_release(spy_hook *spy);
/** The vtable spies use (static const). */
const hk_hook_vtable *spy_hook_vtable(void);

/** Make the nth next call (1 = next) of `slot` and `count`-1 more fail. nth <= 0 clears. */
void spy_hook_fail(spy_hook *spy, spy_slot slot, int nth, int count, hk_code code, const char *message);
/** Request a stop at the nth next call of `slot` (before_run, after_run,
 *  after_create) and `count`-1 more (SPY_FOREVER: all). nth <= 0 clears. */
void spy_hook_stop_at(spy_hook *spy, spy_slot slot, int nth, int count);

/* request builders (they set request_enabled) */
void spy_hook_fetch(spy_hook *spy, hk_handle tensor);
/** Feed an int64 scalar `value` to `tensor` (storage inside the spy). */
void spy_hook_feed_i64(spy_hook *spy, hk_handle tensor, int64_t value);
void spy_hook_target(spy_hook *spy, hk_handle op);
void spy_hook_options(spy_hook *spy, int32_t trace_level, int64_t timeout_ms);
/** Forget the configured request (no request at all). */
void spy_hook_clear_request(spy_hook *spy);

/** Zero the call counters and records (scripts and request are kept). */
void spy_hook_reset(spy_hook *spy);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TEST_SPY_HOOK_H */
