/*
 * forwarding_executor — a wrapper executor, as hooked/sys/executor.h
 * ("Wrappers") invites third parties to write: it forwards every slot to an
 * inner executor and counts the runs that go through it (what a wrapper
 * might add). Its sessions are structs of its own that hold the raw session
 * of the inner executor it opened for them.
 *
 *   FORWARDING_RIGHT  passes the inner executor the inner raw session in
 *                     every slot that takes a session, control ops naming a
 *                     session included (a copy of the argument naming it).
 *   FORWARDING_WRONG  the same, except that `control` forwards its argument
 *                     as it is: HK_CONTROL_SNAPSHOT_ATTACH then names the
 *                     wrapper's own session struct, which is no raw session
 *                     of the inner executor (contract H61).
 *
 * Memory comes from the inner executor's env (a counting allocator sees it).
 */
#ifndef HOOKED_TEST_FORWARDING_EXECUTOR_H
#define HOOKED_TEST_FORWARDING_EXECUTOR_H

#include <hooked/hooked.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum forwarding_kind { FORWARDING_RIGHT = 1, FORWARDING_WRONG = 2 } forwarding_kind;

/** A wrapper around `inner` (borrowed; must outlive it), named
 *  "forwarding (right)" or "forwarding (wrong)". Free with hk_executor_free(). */
hk_code forwarding_executor_new(hk_executor **out, hk_executor *inner, forwarding_kind kind, hk_status *st);

/** The runs that went through the wrapper (every session's). */
int forwarding_executor_runs(hk_executor *wrapper);

#ifdef __cplusplus
}
#endif
#endif
