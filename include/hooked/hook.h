/*
 * hooked — hooks as a program holds them: the hk_hook type, its name, and
 * freeing it.
 *
 * Every hook, built-in (hooked/hooks.h and the other hook headers) or a
 * program's own, is an hk_hook the program creates, hands to a session or
 * a host loop (which borrow it), and frees after them. A program that uses
 * hooks needs only this header; one that implements a hook also includes
 * hooked/sys/hook.h, the interface a hook's callbacks are written against.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_HOOK_H
#define HOOKED_HOOK_H

#include "hooked/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A hook: an implementation (hooked/sys/hook.h) and its user pointer. */
typedef struct hk_hook hk_hook;

/**
 * Free the hook, calling vtable->destroy(user) exactly once (if set).
 * @param hook  consumed; NULL is a no-op. It must not be attached to a
 *              session that is still open: close or free the session first.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API void hk_hook_free(hk_hook *hook);
/**
 * @return the name given at creation ("hook" when it was NULL; "(null hook)"
 *         for a NULL hook).
 * **Ownership:** borrowed; valid until hk_hook_free().
 * **Threads:** any. **Allocates:** no.
 */
HK_API const char *hk_hook_name(const hk_hook *hook);

#ifdef __cplusplus
}
#endif

#endif /* HOOKED_HOOK_H */
