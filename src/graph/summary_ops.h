/*
 * The graph's summary ops (summary_ops.c), as graph.c reaches them.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_GRAPH_SUMMARY_OPS_H
#define HOOKED_GRAPH_SUMMARY_OPS_H

#include "graph_internal.h"
#include "hooked/summary.h"

/** HK_CONTROL_MERGE_SUMMARIES (hooked/summary.h) for the graph executor:
 *  `arg` is an hk_merge_summaries_request. */
hk_code hk__graph_merge_summaries_control(hk_graph *g, void *arg, hk_status *st);

#endif /* HOOKED_GRAPH_SUMMARY_OPS_H */
