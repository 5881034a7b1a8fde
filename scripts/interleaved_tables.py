#!/usr/bin/env python3
"""Tables and plots from hardact_bench's interleaved mode (--hardact_mode=interleaved, the default).

    scripts/interleaved_tables.py bench.json [more.json ...] --out DIR [--title TEXT]
    scripts/interleaved_tables.py --cards H100=h100.json H200=h200.json --out DIR [--cards-file NAME]

JSON files may be gzipped (as kept in docs/performance/data). Each interleaved benchmark is one
case, named <op>/<dtype>/interleaved/<placement>/<alignment>/n:<n>[/calls:<k>], with counters per
contender C: C_x_copy (median over reps of the copy's time over C's time in the same rep),
C_x_copy_fwd / C_x_copy_rev (the same over each order's reps), C_x_copy_q1 / C_x_copy_q3
(quartiles), C_GBps, C_us. Files given later override earlier ones for the same case.

The fused epilogue rows (bench/bench_fused.cu) are named fused_<form>/<dtype>/interleaved/
out_of_place/aligned/n:<n>/shape:<dims>, have one more contender, unfused (two launches, its x copy
against the fused job's copy), and the counters cub_mismatches and, for float, unfused_mismatches;
they get a table of their own and stay out of the reference rows, the sweeps and the plots.

Writes to DIR:
    interleaved_tables.md   reference rows (x copy as "median (forward / reverse) [q1-q3]"),
                            the fused epilogue rows, the summing rows (bench/bench_summed.cu:
                            the summing call against the plain one and the floor), the size
                            sweeps, and time per call for the launch-bound sizes
    sweep_<op>_<dtype>.png  x copy against elements, one line per contender, one panel per placement
or, with --cards, cards.md (or --cards-file): the reference rows of each card side by side, with
whether hardact reaches 0.99 x copy and CUB - 0.3% on each. Every table and plot names the GPU and
the run's start time from the JSON's context, so a copy of it says what it measured.
"""

import argparse
import gzip
import json
import os
import sys
from collections import defaultdict

CONTENDERS = ["hardact", "hardact_direct", "hardact_staged", "cub"]
PANELS = [("out_of_place", "aligned"), ("out_of_place", "misaligned"),
          ("out_of_place", "relatively_misaligned"), ("in_place", "aligned")]
REFERENCE_BYTES = 4096 * 393216 * 4
FUSED_PREFIX = "fused_"
SUMMED_PREFIX = "summed_"
FUSED_ORDER = ["fused_bias_hardswish_last_dim", "fused_bias_hardswish_nchw", "fused_batchnorm_hardswish_nchw",
               "fused_batchnorm_hardswish_nhwc", "fused_residual_hardswish", "fused_hardsigmoid_gate_nchw",
               "fused_hardsigmoid_gate_nhwc"]


def parse(name):
    parts = name.split("/")
    if len(parts) < 6 or parts[2] != "interleaved":
        return None
    fields = {"op": parts[0], "dtype": parts[1], "placement": parts[3], "alignment": parts[4], "calls": 1}
    for part in parts[5:]:
        if ":" in part:
            key, value = part.split(":", 1)
            if key in ("n", "calls"):
                fields[key] = int(value)
            elif key == "shape":
                fields[key] = value
    return fields if "n" in fields else None


def load(paths):
    cases, contexts = {}, []
    for path in paths:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as handle:
            data = json.load(handle)
        contexts.append(data.get("context", {}))
        for row in data.get("benchmarks", []):
            fields = parse(row.get("run_name", row.get("name", "")))
            if fields is None or row.get("error_occurred"):
                continue
            key = (fields["op"], fields["dtype"], fields["placement"], fields["alignment"], fields["n"], fields["calls"])
            cases[key] = row
    return cases, contexts


def ratio_cell(row, contender):
    if f"{contender}_x_copy" not in row:
        return "—"
    return "{:.3f} ({:.3f} / {:.3f}) [{:.3f}–{:.3f}]".format(
        row[f"{contender}_x_copy"], row[f"{contender}_x_copy_fwd"], row[f"{contender}_x_copy_rev"],
        row[f"{contender}_x_copy_q1"], row[f"{contender}_x_copy_q3"])


def element_bytes(dtype):
    if "_to_" in dtype:  # converting cases use the reference shape's float element count
        return 4
    return {"float": 4, "double": 8, "half": 2, "bfloat16": 2}.get(dtype, 4)


def is_fused(key):
    return key[0].startswith(FUSED_PREFIX)


def has_own_table(key):
    return key[0].startswith((FUSED_PREFIX, SUMMED_PREFIX))


def is_reference(key):
    op, dtype, _, _, n, calls = key
    return calls == 1 and n * element_bytes(dtype) == REFERENCE_BYTES and not has_own_table(key)


def reference_table(cases):
    lines = ["| case | memcpy GB/s | hardact GB/s | hardact × copy | cub × copy | hardact − cub |",
             "|---|---|---|---|---|---|"]
    for key in sorted(k for k in cases if is_reference(k)):
        op, dtype, placement, alignment, n, _ = key
        row = cases[key]
        diff = row.get("hardact_x_copy", 0) - row.get("cub_x_copy", 0)
        lines.append(f"| {op} {dtype} {placement} {alignment} (n={n}) | {row.get('memcpy_GBps', 0):.0f} | "
                     f"{row.get('hardact_GBps', 0):.0f} | {ratio_cell(row, 'hardact')} | {ratio_cell(row, 'cub')} | "
                     f"{diff:+.3f} |")
    return lines


def in_order(rows, order):
    """(op, dtype, n, row, the name's fields) of each row, sorted by order(key)."""
    for key in sorted(rows, key=order):
        op, dtype, _, _, n, _ = key
        row = rows[key]
        yield op, dtype, n, row, parse(row.get("run_name", row.get("name", ""))) or {}


def fused_table(cases):
    """The fused epilogue rows: x copy of hardact, CUB and the two unfused launches, all against the
    copy of the fused job's bytes, and the bitwise check's mismatch counts."""
    rows = {k: v for k, v in cases.items() if is_fused(k)}
    if not rows:
        return []

    def order(key):  # the reference size first, then the mid size; forms in the bench's order
        op, dtype, _, _, n, _ = key
        dtypes = ["float", "bfloat16"]
        return (n < 2 ** 30, FUSED_ORDER.index(op) if op in FUSED_ORDER else len(FUSED_ORDER), op,
                dtypes.index(dtype) if dtype in dtypes else len(dtypes), dtype, -n)

    def count(row, counter):
        return str(int(row[counter])) if counter in row else "—"

    lines = ["| case | shape (n) | memcpy GB/s | hardact × copy | cub × copy | unfused × copy | hardact − cub | "
             "mismatches cub / unfused |",
             "|---|---|---|---|---|---|---|---|"]
    for op, dtype, n, row, fields in in_order(rows, order):
        diff = row.get("hardact_x_copy", 0) - row.get("cub_x_copy", 0)
        lines.append(f"| {op[len(FUSED_PREFIX):]} {dtype} | {fields.get('shape', '?')} ({n}) | "
                     f"{row.get('memcpy_GBps', 0):.0f} | {ratio_cell(row, 'hardact')} | {ratio_cell(row, 'cub')} | "
                     f"{ratio_cell(row, 'unfused')} | {diff:+.3f} | "
                     f"{count(row, 'cub_mismatches')} / {count(row, 'unfused_mismatches')} |")
    return lines


def summed_table(cases):
    """The summing rows (bench/bench_summed.cu): the transform with its per-(n, c) sums, the same
    transform with a plain output, the floor (an empty kernel's launch, then the copy) and CUB's two
    passes, x copy; then the summing call's time over the plain one's, and the plain one's over the
    floor's (medians over reps of each contender's time)."""
    rows = {k: v for k, v in cases.items() if k[0].startswith(SUMMED_PREFIX)}
    if not rows:
        return []

    def order(key):
        op, dtype, _, _, n, _ = key
        return (not op.endswith("nhwc"), n >= 2 ** 25, dtype != "float", n)

    def time_ratio(row, a, b):
        return f"{row[a + '_us'] / row[b + '_us']:.3f}" if a + "_us" in row and b + "_us" in row else "—"

    def cell(row, contender):
        return f"{row[contender + '_x_copy']:.3f}" if contender + "_x_copy" in row else "—"

    lines = ["| layout | dtype | shape | copy µs | summing × copy | plain × copy | floor × copy | cub × copy | "
             "summing / plain (time) | plain / floor (time) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for op, dtype, _, row, fields in in_order(rows, order):
        lines.append(f"| {op.rsplit('_', 1)[-1].upper()} | {dtype} | {fields.get('shape', '?')} | "
                     f"{row.get('memcpy_us', 0):.1f} | {ratio_cell(row, 'hardact')} | {cell(row, 'plain')} | "
                     f"{cell(row, 'floor')} | {cell(row, 'cub')} | {time_ratio(row, 'hardact', 'plain')} | "
                     f"{time_ratio(row, 'plain', 'floor')} |")
    return lines


def sweep_tables(cases):
    lines = []
    groups = defaultdict(dict)
    for key, row in cases.items():
        op, dtype, placement, alignment, n, calls = key
        if calls == 1 and not has_own_table(key):
            groups[(op, dtype, placement, alignment)][n] = row
    for group in sorted(groups):
        rows = groups[group]
        if len(rows) < 3:
            continue
        present = [c for c in CONTENDERS if any(f"{c}_x_copy" in r for r in rows.values())]
        lines.append("")
        lines.append("### {} {} {} {}".format(*group))
        lines.append("")
        lines.append("| n | memcpy GB/s | " + " | ".join(f"{c} × copy" for c in present) + " |")
        lines.append("|---" * (2 + len(present)) + "|")
        for n in sorted(rows):
            row = rows[n]
            cells = [f"{row[c + '_x_copy']:.3f}" if c + "_x_copy" in row else "—" for c in present]
            lines.append(f"| 2^{n.bit_length() - 1} ({n}) | {row.get('memcpy_GBps', 0):.0f} | " + " | ".join(cells) + " |"
                         if n & (n - 1) == 0 else
                         f"| {n} | {row.get('memcpy_GBps', 0):.0f} | " + " | ".join(cells) + " |")
    return lines


def launch_table(cases):
    rows = {k: v for k, v in cases.items() if k[5] > 1}
    if not rows:
        return []
    lines = ["", "| case | n | memcpy µs | hardact µs | cub µs |", "|---|---|---|---|---|"]
    for key in sorted(rows):
        op, dtype, placement, alignment, n, calls = key
        row = rows[key]
        lines.append(f"| {op} {dtype} {placement} {alignment} | {n} | {row.get('memcpy_us', 0):.2f} | "
                     f"{row.get('hardact_us', 0):.2f} | {row.get('cub_us', 0):.2f} |")
    return lines


def plot(cases, out_dir, context):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no plots", file=sys.stderr)
        return []
    written = []
    by_series = defaultdict(lambda: defaultdict(dict))
    for key, row in cases.items():
        op, dtype, placement, alignment, n, calls = key
        if calls == 1 and not has_own_table(key):
            by_series[(op, dtype)][(placement, alignment)][n] = row
    for (op, dtype), panels in sorted(by_series.items()):
        if max(len(p) for p in panels.values()) < 3:
            continue
        figure, axes = plt.subplots(1, len(PANELS), figsize=(5 * len(PANELS), 4), sharey=True)
        for axis, panel in zip(axes, PANELS):
            rows = panels.get(panel, {})
            for contender in CONTENDERS:
                points = sorted((n, r[contender + "_x_copy"]) for n, r in rows.items() if contender + "_x_copy" in r)
                if points:
                    axis.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=contender)
            axis.set_xscale("log", base=2)
            axis.axhline(1.0, color="grey", linewidth=0.8)
            axis.set_title(" ".join(panel))
            axis.set_xlabel("elements")
        axes[0].set_ylabel("× cudaMemcpy (paired median)")
        axes[0].legend()
        figure.suptitle(f"{op} {dtype}: {describe_run(context)}")
        figure.tight_layout()
        path = os.path.join(out_dir, f"sweep_{op}_{dtype}.png")
        figure.savefig(path, dpi=90)
        plt.close(figure)
        written.append(path)
    return written


ROW_ORDER = [("hardsigmoid", "float"), ("hardtanh", "float"), ("hardsigmoid", "bfloat16"), ("hardsigmoid", "half"),
             ("hardsigmoid", "double"), ("hardsigmoid_backward", "float"), ("hardsigmoid_backward", "bfloat16"),
             ("hardsigmoid", "float_to_bfloat16"), ("hardsigmoid", "bfloat16_to_float")]
PLACEMENT_ORDER = [("out_of_place", "aligned"), ("in_place", "aligned"), ("out_of_place", "misaligned"),
                   ("out_of_place", "relatively_misaligned")]
PLACEMENT_TEXT = {("out_of_place", "aligned"): "out of place", ("in_place", "aligned"): "in place",
                  ("out_of_place", "misaligned"): "x+1 → y+1",
                  ("out_of_place", "relatively_misaligned"): "x+1 → y (relatively misaligned)"}


def describe_run(context):
    return f"{context.get('gpu', '?')}, run {context.get('date', '?')}"


def two_card_table(cards, floor=0.99, tolerance=0.003):
    """Reference rows of several cards side by side, with whether hardact reaches `floor` x copy and
    CUB - `tolerance` on each: cards is [(label, cases)]."""
    def cell(row, contender):
        if row is None or f"{contender}_x_copy" not in row:
            return "—"
        return "{:.3f} ({:.3f} / {:.3f})".format(row[f"{contender}_x_copy"], row[f"{contender}_x_copy_fwd"],
                                                 row[f"{contender}_x_copy_rev"])

    def marks(row):
        if row is None or "hardact_x_copy" not in row:
            return "—"
        h, c = row["hardact_x_copy"], row.get("cub_x_copy", 0)
        return ("✓" if h >= floor else "✗") + ("✓" if h >= c - tolerance else "✗")

    header = "| case | " + " | ".join(f"{label} hardact | {label} CUB" for label, _, _ in cards) + \
             f" | ≥{floor} / ≥CUB−{tolerance * 100:.1f}%: " + ", ".join(label for label, _, _ in cards) + " |"
    lines = [f"- {label}: {describe_run(context)}, sweep {context.get('hardact_sweep', '?')}, "
             f"{context.get('hardact_reps', '?')} reps" for label, _, context in cards]
    lines += ["", header, "|---" * (2 + 2 * len(cards)) + "|"]
    for op, dtype in ROW_ORDER:
        for placement in PLACEMENT_ORDER:
            rows = []
            for _, cases, _ in cards:
                found = [v for k, v in cases.items()
                         if k[:4] == (op, dtype) + placement and is_reference(k)]
                rows.append(found[0] if found else None)
            if all(r is None for r in rows):
                continue
            name = f"{dtype.replace('_to_', ' → ')} {op.replace('_backward', ' backward')}, {PLACEMENT_TEXT[placement]}"
            lines.append(f"| {name} | " + " | ".join(f"{cell(r, 'hardact')} | {cell(r, 'cub')}" for r in rows) +
                         " | " + ", ".join(marks(r) for r in rows) + " |")
    for dtype in ("float", "bfloat16", "half", "double"):
        spans = []
        for _, cases, _ in cards:
            launch = [v for k, v in cases.items() if k[5] > 1 and k[1] == dtype and k[0] == "hardsigmoid"]
            for contender in ("hardact", "cub"):
                times = [r[f"{contender}_us"] for r in launch if f"{contender}_us" in r]
                spans.append(f"{min(times):.2f}–{max(times):.2f}" if times else "—")
        if any(s != "—" for s in spans):
            lines.append(f"| µs per call, {dtype}, launch-bound sizes | " + " | ".join(spans) + " | |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", nargs="*")
    parser.add_argument("--out", required=True)
    parser.add_argument("--title", default="hardact_bench, interleaved")
    parser.add_argument("--cards", nargs="+", metavar="LABEL=JSON",
                        help="instead: one side-by-side table of the reference rows of each card (cards.md)")
    parser.add_argument("--cards-file", default="cards.md", help="file name of the --cards table in --out")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.cards:
        cards = []
        for spec in args.cards:
            label, path = spec.split("=", 1)
            cases, contexts = load([path])
            cards.append((label, cases, contexts[0]))
        with open(os.path.join(args.out, args.cards_file), "w") as handle:
            handle.write("\n".join(two_card_table(cards)) + "\n")
        print("wrote", os.path.join(args.out, args.cards_file))
        return 0
    if not args.json:
        parser.error("give bench JSON files, or --cards")
    cases, contexts = load(args.json)
    if not cases:
        print("no interleaved benchmarks in the input", file=sys.stderr)
        return 1
    context = contexts[-1]
    lines = [f"# {args.title}", "",
             f"GPU {context.get('gpu', '?')} ({context.get('gpu_sms', '?')} SMs), CUDA runtime "
             f"{context.get('cuda_runtime', '?')}, CUB {context.get('cub_version', '?')}, run {context.get('date', '?')}, "
             f"{context.get('hardact_reps', '?')} reps per contender in alternating order.",
             "", "× copy: median (forward-order reps / reverse-order reps) [quartiles] of the copy's time over the "
             "contender's in the same rep.", "", "## Reference rows", ""]
    lines += reference_table(cases)
    fused = fused_table(cases)
    if fused:
        lines += ["", "## Fused epilogues", "",
                  "An activation fused with a bias, a folded BatchNorm's scale and shift, a residual or a "
                  "squeeze-excitation gate (bench/bench_fused.cu). × copy against a copy of the fused job's "
                  "bytes (full-length inputs read once, the output written once), unfused (two launches) "
                  "included; mismatches: elements whose bits differ from hardact's output (unfused: float only).",
                  ""]
        lines += fused
    summed = summed_table(cases)
    if summed:
        lines += ["", "## Sums of the outputs", "",
                  "A folded BatchNorm + HardSwish writing one sum per (n, c) of its output (bench/bench_summed.cu): "
                  "summing (hardact with an OutputWithSums), plain (the same transform, no sums), floor (an empty "
                  "kernel's launch, then the copy) and CUB's transform and segmented sum, × copy of the job's bytes.",
                  ""]
        lines += summed
    lines += ["", "## Size sweeps (× copy, paired median)"]
    lines += sweep_tables(cases)
    launch = launch_table(cases)
    if launch:
        lines += ["", "## Launch-bound sizes (median time per call in loops of back-to-back calls)"]
        lines += launch
    with open(os.path.join(args.out, "interleaved_tables.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    for path in plot(cases, args.out, context):
        print("wrote", path)
    print("wrote", os.path.join(args.out, "interleaved_tables.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
