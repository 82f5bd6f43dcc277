#!/usr/bin/env python3
"""distributed_sim — the figures of docs/distributed.md that come from a model, not a measurement.

    python3 bench/distributed_sim.py              # every section with the defaults
    python3 bench/distributed_sim.py --help       # the inputs

Sections (each printed as a Markdown table):
  scale       what limits each mode, per step or per update, from byte counts alone:
              synchronous data parallel, the bytes each rank sends and receives per step to average
              the gradients (2 (N-1)/N of them, as hk_mpi_average() moves them) and that time at a link
              speed; the parameter server, the bytes through the chief per update (the worker's
              update in, the shared state back out, each with its 32-byte header) and the cap on
              updates per second that the chief's link puts on the whole job.
  checkpoint  a Monte Carlo simulation of one checkpoint's wall time for N ranks and a model of M
              bytes: today's single writer (the chief writes M bytes: data file fsync, directory
              fsync, state file fsync, directory fsync) against the sharded design (every rank writes
              its M/N-byte shard and fsyncs it and the directory; the chief gathers the shards' CRCs
              once the slowest rank is done, then writes the index and the state file, each with a
              file and a directory fsync). Each rank's disk bandwidth is drawn per trial from a
              log-normal distribution around --disk-bw (--jitter), so the sharded write waits for
              the slowest of N draws; --aggregate-bw caps the ranks' total (a shared file system).
  reshard     restoring a sharded checkpoint written by N ranks with N' ranks: shard files each
              rank opens, the elements it needs, and what it would read if it read every overlapping
              old block whole (to check a CRC per whole slice), for the block partition of the
              flattened model that hk_mpi_average() already uses.

Nothing here is measured: the inputs are printed with every table. The defaults for the disk are
round figures near what bench/checkpoint measured on the development VM (README, Checkpoints: a
256 MiB save in 0.18-0.24 s, a small save with four fsyncs in 1.1-1.8 ms).

Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
"""

import argparse
import math
import random
import statistics

PS_HEADER_BYTES = 32  # src/mpi/ps.h: four int64 (global step, flags, fingerprint, reserved)
DIGITS_PARAMS = 64 * 32 + 32 + 32 * 10 + 10  # examples/train_digits.c: w1, b1, w2, b2


def fmt_bytes(n):
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n:.0f} B"


def fmt_secs(s):
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def fmt_rate(r):
    return f"{r:,.0f}" if r >= 100 else f"{r:.3g}"


def models(args):
    out = [("digits MLP", DIGITS_PARAMS)]
    out += [(f"{p / 1e6:g}M parameters", int(p)) for p in args.params]
    return out


def section_scale(args):
    links = args.link_gbit
    print("## scale\n")
    print(f"f32 parameters (4 bytes); links at {', '.join(f'{g:g}' for g in links)} Gbit/s "
          f"(1 Gbit/s = 1.25e8 bytes/s), bandwidth terms only (no latency, no computation).\n")
    print("Synchronous data parallel: bytes each rank sends (and receives) per step to average the "
          "gradients, 2 (N-1)/N of them, and that time per step at each link speed.\n")
    head = "| model | gradient bytes | N | bytes per rank per step | " + " | ".join(
        f"time at {g:g} Gbit/s" for g in links) + " |"
    print(head)
    print("|" + "---|" * (4 + len(links)))
    for name, p in models(args):
        g = 4 * p
        for n in args.sync_ranks:
            moved = 2 * (n - 1) / n * g
            cells = " | ".join(fmt_secs(moved / (gb * 1.25e8)) for gb in links)
            print(f"| {name} | {fmt_bytes(g)} | {n} | {fmt_bytes(moved)} | {cells} |")
    print()
    print("Parameter server: bytes through the chief's link per update (the update in, the shared "
          "state out, each with its 32-byte header) and the most updates per second the chief's "
          "link allows, whatever the number of workers.\n")
    head = "| model | model bytes | bytes through the chief per update | " + " | ".join(
        f"updates/s at {g:g} Gbit/s" for g in links) + " |"
    print(head)
    print("|" + "---|" * (3 + len(links)))
    for name, p in models(args):
        m = 4 * p
        per = 2 * (m + PS_HEADER_BYTES)
        cells = " | ".join(fmt_rate(gb * 1.25e8 / per) for gb in links)
        print(f"| {name} | {fmt_bytes(m)} | {fmt_bytes(per)} | {cells} |")
    print()
    print("From one rank: the broadcast at a session's start sends the model from the chief "
          "(at least model bytes / link speed for the last rank to have it, whatever the tree), and "
          f"the single-writer checkpoint writes it from the chief at its disk speed "
          f"({fmt_bytes(args.disk_bw)}/s here).\n")
    print("| model | model bytes | " + " | ".join(f"broadcast at {g:g} Gbit/s" for g in links) +
          " | checkpoint write at the disk speed |")
    print("|" + "---|" * (3 + len(links)))
    for name, p in models(args):
        m = 4 * p
        cells = " | ".join(fmt_secs(m / (gb * 1.25e8)) for gb in links)
        print(f"| {name} | {fmt_bytes(m)} | {cells} | {fmt_secs(m / args.disk_bw)} |")
    print()


def simulate(n, m, args, rng):
    single, sharded, write_phase = [], [], []
    gather = args.gather_latency * math.ceil(math.log2(n)) if n > 1 else 0.0
    for _ in range(args.trials):
        bws = [args.disk_bw * rng.lognormvariate(0.0, args.jitter) for _ in range(n)]
        if args.aggregate_bw:
            b0 = min(bws[0], args.aggregate_bw)
            eff = [min(b, args.aggregate_bw / n) for b in bws]
        else:
            b0, eff = bws[0], bws
        single.append(m / b0 + 4 * args.fsync)
        w = max(m / n / b + 2 * args.fsync for b in eff)
        write_phase.append(w)
        sharded.append(w + gather + 4 * args.fsync)
    return statistics.median(single), statistics.median(write_phase), statistics.median(sharded), \
        sorted(sharded)[int(0.95 * (len(sharded) - 1))]


def section_checkpoint(args):
    rng = random.Random(args.seed)
    print("## checkpoint\n")
    agg = f"capped at {fmt_bytes(args.aggregate_bw)}/s in all" if args.aggregate_bw else "no cap on the total"
    print(f"Inputs: per-rank disk bandwidth {fmt_bytes(args.disk_bw)}/s, log-normal jitter sigma "
          f"{args.jitter:g} per rank and trial ({agg}); fsync {fmt_secs(args.fsync)}; gather "
          f"{fmt_secs(args.gather_latency)} per tree level (ceil(log2 N) levels); {args.trials} trials, "
          f"seed {args.seed}; medians (and the 95th percentile of the sharded time).\n")
    print("| model | N | single writer | sharded: slowest shard | sharded: + commit | sharded p95 | "
          "speed-up |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, p in models(args):
        m = 4 * p
        for n in args.ranks:
            s, w, t, p95 = simulate(n, m, args, rng)
            print(f"| {name} ({fmt_bytes(m)}) | {n} | {fmt_secs(s)} | {fmt_secs(w)} | {fmt_secs(t)} | "
                  f"{fmt_secs(p95)} | {s / t:.2f}x |")
    print()


def blocks(total, n):
    """hk_mpi_average()'s partition: n blocks, the first total % n one element longer."""
    q, extra = divmod(total, n)
    out, start = [], 0
    for r in range(n):
        length = q + (1 if r < extra else 0)
        out.append((start, start + length))
        start += length
    return out


def section_reshard(args):
    total = DIGITS_PARAMS if args.reshard_elements is None else args.reshard_elements
    print("## reshard\n")
    print(f"A model of {total:,} elements (flattened in variable order) written as N shards by the block "
          "partition, restored with N' ranks under the same partition: the most shard files one new rank "
          "opens, the most elements one new rank needs (its block), and the most it would read if it read "
          "every overlapping old block whole, to check whole-slice CRCs (then, for a replicated model, an all-gather "
          "gives every rank the rest: (N'-1)/N' of the model received per rank).\n")
    print("| N (written) | N' (restoring) | most shard files per rank | elements needed per rank (most) | "
          "elements read, whole old blocks (most) |")
    print("|---:|---:|---:|---:|---:|")
    for n, n2 in args.reshard:
        old, new = blocks(total, n), blocks(total, n2)
        overlaps = [[(a, b) for a, b in old if a < e and s < b] for s, e in new]
        most_files = max(len(o) for o in overlaps)
        most_needed = max(e - s for s, e in new)
        most_read = max(sum(b - a for a, b in o) for o in overlaps)
        print(f"| {n} | {n2} | {most_files} | {most_needed:,} | {most_read:,} |")
    print()


def pairs(text):
    out = []
    for item in text.split(","):
        a, b = item.split(":")
        out.append((int(a), int(b)))
    return out


def ints(text):
    return [int(x) for x in text.split(",")]


def floats(text):
    return [float(x) for x in text.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sections", nargs="*", default=["scale", "checkpoint", "reshard"],
                    help="scale, checkpoint, reshard (default: all three)")
    ap.add_argument("--params", type=floats, default=[100e6],
                    help="parameter counts besides the digits MLP's %d (default 100e6)" % DIGITS_PARAMS)
    ap.add_argument("--link-gbit", type=floats, default=[10.0, 100.0], help="link speeds, Gbit/s")
    ap.add_argument("--sync-ranks", type=ints, default=[2, 4, 8, 64], help="rank counts of the sync table")
    ap.add_argument("--ranks", type=ints, default=[1, 2, 4, 8, 16, 64, 256],
                    help="rank counts of the checkpoint simulation")
    ap.add_argument("--disk-bw", type=float, default=1e9, help="per-rank disk bandwidth, bytes/s (1e9)")
    ap.add_argument("--aggregate-bw", type=float, default=0.0,
                    help="cap on all ranks' disk bandwidth together, bytes/s (0: none; a shared file system)")
    ap.add_argument("--fsync", type=float, default=0.4e-3, help="one fsync of a written file or a directory, s")
    ap.add_argument("--gather-latency", type=float, default=20e-6, help="one level of the CRC gather, s")
    ap.add_argument("--jitter", type=float, default=0.25, help="log-normal sigma of a rank's disk bandwidth")
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--reshard", type=pairs, default=[(8, 8), (8, 4), (8, 3), (8, 16), (4, 6), (64, 48)],
                    help="N:N' pairs, comma-separated")
    ap.add_argument("--reshard-elements", type=int, default=None,
                    help="elements of the resharded model (default: the digits MLP's)")
    args = ap.parse_args()
    for s in args.sections:
        if s not in ("scale", "checkpoint", "reshard"):
            ap.error(f"unknown section '{s}'")
    for s in args.sections:
        {"scale": section_scale, "checkpoint": section_checkpoint, "reshard": section_reshard}[s](args)


if __name__ == "__main__":
    main()
