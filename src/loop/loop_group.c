/*
 * A host loop over a group (hooked/loop.h, hk_loop_options.group): the
 * options a group refuses, the arrays and states registered per rank or
 * partitioned, and what the loop's Saver is given of them. The Saver
 * (hooked/checkpoint.h) makes the sharded checkpoints; the checkpoint hook
 * lets rank 0 alone lock the directory and write the events; the loop
 * leaves its own events (the StepCounter's, SessionLog START) to rank 0.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "loop/loop_internal.h"
#include "util/common.h"

#include <string.h>

hk_code hk__loop_group_validate(const hk_loop_options *o, hk_status *st) {
  if (!o->group) {
    if (o->group_user)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: group_user is given without a group");
    return HK_OK;
  }
  hk_code rc = hk_group_check(o->group, o->group_user, "hk_loop_new: group", st);
  if (rc != HK_OK) return rc;
  const int size = o->group->size(o->group_user);
  /* Every rank saves at the same steps: a clock's cadence differs between ranks. */
  if (!hk_secs_is_unset(o->save_secs) && o->save_secs != 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: save_secs %g with a group of %d ranks: every rank saves at the same steps and "
                         "a clock differs between ranks; give save_steps",
                         o->save_secs, size);
  if (o->checkpoint_dir && hk_secs_is_unset(o->save_secs) && o->save_steps == HK_UNSET_STEPS)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: save_steps: a loop over a group of %d ranks needs a cadence in steps (the "
                         "default, every 600 s, is a clock's, and a clock differs between ranks); 0 disables saves",
                         size);
  if (o->best_k > 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: best_k %lld with a group of %d ranks: best-k retention does not rank sharded "
                         "checkpoints",
                         (long long)o->best_k, size);
  return HK_OK;
}

void hk__loop_group_init(hk_loop *l, const hk_loop_options *o) {
  l->group = o->group;
  l->group_user = o->group_user;
  l->grank = o->group ? o->group->rank(o->group_user) : 0;
  l->gsize = o->group ? o->group->size(o->group_user) : 1;
}

int hk__loop_follower(const hk_loop *l) { return l->gsize > 1 && l->grank != 0; }

static hk_code note(hk_loop *l, const char *fn, char ***list, size_t *n, size_t *cap, const char *name, hk_status *st) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 4;
    char **grown = hk_env_realloc(&l->env, *list, c * sizeof *grown);
    if (!grown) return hk__loop_fail(l, hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", fn), st);
    *list = grown;
    *cap = c;
  }
  if (!((*list)[*n] = hk_env_strdup(&l->env, name)))
    return hk__loop_fail(l, hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", fn), st);
  (*n)++;
  return HK_OK;
}

hk_code hk__loop_group_check(const char *fn, const char *name, unsigned flags, int32_t rank, int is_state,
                             hk_status *st) {
  const unsigned per_rank = flags & HK_LOOP_PER_RANK, partitioned = flags & HK_LOOP_PARTITIONED;
  if (!per_rank && !partitioned) return HK_OK;
  if (per_rank && partitioned)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "%s: array '%s': HK_LOOP_PER_RANK and HK_LOOP_PARTITIONED exclude each other (a rank's own "
                         "value, or its block of a global array)",
                         fn, name);
  if (partitioned && rank != 1)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "%s: array '%s': HK_LOOP_PARTITIONED needs a one-dimensional array (a rank's block of a flat "
                         "global array), got rank %d",
                         fn, name, (int)rank);
  if (!is_state && (flags & (HK_LOOP_GLOBAL_STEP | HK_LOOP_NO_CHECKPOINT)))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: array '%s': %s is neither saved per rank nor partitioned", fn,
                         name, (flags & HK_LOOP_GLOBAL_STEP) ? "the global step" : "an HK_LOOP_NO_CHECKPOINT array");
  return HK_OK;
}

hk_code hk__loop_group_note(hk_loop *l, const char *fn, const char *name, unsigned flags, hk_status *st) {
  /* Without a group, an array or state as any other. */
  if (!l->group) return HK_OK;
  if (flags & HK_LOOP_PER_RANK) return note(l, fn, &l->per_rank, &l->nper_rank, &l->per_rank_cap, name, st);
  if (flags & HK_LOOP_PARTITIONED) return note(l, fn, &l->partitioned, &l->npartitioned, &l->partitioned_cap, name, st);
  return HK_OK;
}

void hk__loop_group_saver_options(const hk_loop *l, hk_saver_options *vo) {
  if (!l->group) return;
  vo->group = l->group;
  vo->group_user = l->group_user;
  vo->per_rank_list = (const char *const *)l->per_rank;
  vo->nper_rank_list = l->nper_rank;
  vo->partitioned_list = (const char *const *)l->partitioned;
  vo->npartitioned_list = l->npartitioned;
}

void hk__loop_group_free(hk_loop *l) {
  for (size_t i = 0; i < l->nper_rank; i++) hk_env_free(&l->env, l->per_rank[i]);
  for (size_t i = 0; i < l->npartitioned; i++) hk_env_free(&l->env, l->partitioned[i]);
  hk_env_free(&l->env, l->per_rank);
  hk_env_free(&l->env, l->partitioned);
}
