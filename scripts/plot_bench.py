#!/usr/bin/env python3
"""Turn hardact_bench JSON (--benchmark_out) into PNG plots and markdown tables.

    scripts/plot_bench.py bench.json [more.json ...] --out DIR [--reference-n 1610612736]

Benchmark names follow bench/bench_common.cuh:
    <op>/<dtype>/<implementation>/<placement>/<alignment>/n:<elements>[/calls:<K>]
plus Google Benchmark's own suffixes (iterations:, repeats:, manual_time). Rows with /calls:K are
launch-bound loops whose reported time is per launch. When repetitions were run, the median
aggregate is used (noise = stddev / mean of the repetitions); otherwise the median of the
iteration rows. Later files override earlier ones for the same benchmark.

Writes to DIR:
    sweep_<op>_<dtype>.png      GB/s against elements, one line per implementation, one panel per
                                placement/alignment
    launch_<op>_<dtype>.png     time per call against elements (launch-bound loops)
    reference_<op>_<dtype>.png  GB/s bars at the reference shape, annotated with x copy
    bench_tables.md             the same figures as markdown tables
"""

import argparse
import json
import math
import os
import statistics
import sys
from collections import defaultdict

REFERENCE_N = 4096 * 393216

# Display order; implementations not listed (e.g. from other bench files) follow alphabetically.
IMPLEMENTATION_ORDER = [
    "memcpy", "hardact_auto", "hardact_w1", "hardact_w2", "hardact_w4", "hardact_w8", "hardact_w16",
    "cub", "thrust", "naive", "grid_stride_vec",
]
PANELS = [("out_of_place", "aligned"), ("out_of_place", "misaligned"),
          ("in_place", "aligned"), ("in_place", "misaligned")]
TIME_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_name(run_name):
    """Splits a benchmark name into its fields, or returns None if it does not follow the scheme."""
    parts = run_name.split("/")
    if len(parts) < 6:
        return None
    fields = dict(zip(("op", "dtype", "impl", "placement", "alignment"), parts[:5]))
    params = {}
    for part in parts[5:]:
        if ":" in part:
            key, value = part.split(":", 1)
            params[key] = value
    if "n" not in params:
        return None
    try:
        fields["n"] = int(params["n"])
        fields["calls"] = int(params.get("calls", "1"))
    except ValueError:
        return None
    return fields


class Result:
    """One benchmark's figures: GB/s, ratio to the copy ceiling, time per call, noise."""

    def __init__(self, fields, gbps, x_copy, seconds, noise, copy_gbps):
        self.__dict__.update(fields)
        self.gbps = gbps
        self.x_copy = x_copy
        self.seconds = seconds
        self.noise = noise
        self.copy_gbps = copy_gbps


def load(paths):
    """Returns (results keyed by run name, errors {run name: message}, context of the last file)."""
    rows_by_run = defaultdict(list)
    context = {}
    for path in paths:
        with open(path) as f:
            document = json.load(f)
        context = document.get("context", context)
        file_rows = defaultdict(list)
        for row in document.get("benchmarks", []):
            run_name = row.get("run_name", row.get("name", ""))
            file_rows[run_name].append(row)
        rows_by_run.update(file_rows)  # later files replace earlier runs of the same benchmark

    results, errors = {}, {}
    for run_name, rows in rows_by_run.items():
        fields = parse_name(run_name)
        if fields is None:
            continue
        failed = [r for r in rows if r.get("error_occurred")]
        if failed:
            errors[run_name] = failed[0].get("error_message", "error")
            continue
        result = summarise(fields, rows)
        if result is not None:
            results[run_name] = result
    return results, errors, context


def seconds_of(row):
    return row["real_time"] * TIME_UNIT_SECONDS.get(row.get("time_unit", "ns"), 1e-9)


def summarise(fields, rows):
    aggregates = {r.get("aggregate_name"): r for r in rows if r.get("run_type") == "aggregate"}
    iterations = [r for r in rows if r.get("run_type", "iteration") == "iteration"]
    if "median" in aggregates:
        median_row = aggregates["median"]
        gbps = median_row.get("bytes_per_second", 0.0) / 1e9
        x_copy = median_row.get("x_copy")
        copy_gbps = median_row.get("copy_GBps")
        seconds = seconds_of(median_row)
        noise = None
        if "stddev" in aggregates and "mean" in aggregates and aggregates["mean"]["real_time"] > 0:
            noise = aggregates["stddev"]["real_time"] / aggregates["mean"]["real_time"]
    elif iterations:
        gbps = statistics.median(r.get("bytes_per_second", 0.0) for r in iterations) / 1e9
        ratios = [r["x_copy"] for r in iterations if "x_copy" in r]
        x_copy = statistics.median(ratios) if ratios else None
        copies = [r["copy_GBps"] for r in iterations if "copy_GBps" in r]
        copy_gbps = statistics.median(copies) if copies else None
        times = [seconds_of(r) for r in iterations]
        seconds = statistics.median(times)
        noise = statistics.pstdev(times) / statistics.mean(times) if len(times) > 1 else None
    else:
        return None
    return Result(fields, gbps, x_copy, seconds, noise, copy_gbps)


def implementation_key(name):
    if name in IMPLEMENTATION_ORDER:
        return (0, IMPLEMENTATION_ORDER.index(name), name)
    return (1, 0, name)


def implementation_color(name):
    """The same colour for an implementation in every panel and figure (memcpy grey)."""
    if name == "memcpy":
        return "grey"
    palette = ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8", "C9", "black", "navy", "gold", "magenta"]
    if name in IMPLEMENTATION_ORDER:
        return palette[(IMPLEMENTATION_ORDER.index(name) - 1) % len(palette)]
    return palette[sum(map(ord, name)) % len(palette)]


def group(results, predicate):
    """{(op, dtype): {(placement, alignment): {impl: {n: Result}}}} of the results that match."""
    grouped = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for r in results.values():
        if predicate(r):
            grouped[(r.op, r.dtype)][(r.placement, r.alignment)][r.impl][r.n] = r
    return grouped


def format_n(n):
    if n > 0 and n & (n - 1) == 0:
        return "2^%d" % (n.bit_length() - 1)
    return "{:,}".format(n)


def format_optional(value, pattern):
    return pattern % value if value is not None else "–"


def plot_lines(plt, grouped, y_of, y_label, title, file_prefix, out_dir, reference_n=None):
    written = []
    for (op, dtype), panels in sorted(grouped.items()):
        used = [p for p in PANELS if p in panels] + sorted(p for p in panels if p not in PANELS)
        columns = 2 if len(used) > 1 else 1
        rows = math.ceil(len(used) / columns)
        figure, axes = plt.subplots(rows, columns, figsize=(7 * columns, 4.5 * rows), squeeze=False)
        for index, panel in enumerate(used):
            axis = axes[index // columns][index % columns]
            for impl in sorted(panels[panel], key=implementation_key):
                points = sorted(panels[panel][impl].items())
                points = [(n, y_of(r)) for n, r in points if y_of(r) is not None]
                if not points:
                    continue
                style = "--" if impl == "memcpy" else "-"
                axis.plot([p[0] for p in points], [p[1] for p in points], style, marker=".", label=impl,
                          color=implementation_color(impl))
            if reference_n is not None:
                axis.axvline(reference_n, color="grey", linewidth=0.8, linestyle=":")
            axis.set_xscale("log", base=2)
            axis.set_xlabel("elements")
            axis.set_ylabel(y_label)
            axis.set_title("%s / %s" % panel)
            axis.grid(True, which="both", alpha=0.3)
            axis.legend(fontsize=7)
        for index in range(len(used), rows * columns):
            axes[index // columns][index % columns].set_visible(False)
        figure.suptitle("%s %s — %s" % (op, dtype, title))
        figure.tight_layout()
        path = os.path.join(out_dir, "%s_%s_%s.png" % (file_prefix, op, dtype))
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written


def plot_reference(plt, grouped, reference_n, out_dir):
    written = []
    for (op, dtype), panels in sorted(grouped.items()):
        used = [p for p in PANELS if p in panels] + sorted(p for p in panels if p not in PANELS)
        columns = 2 if len(used) > 1 else 1
        rows = math.ceil(len(used) / columns)
        figure, axes = plt.subplots(rows, columns, figsize=(7 * columns, 4 * rows), squeeze=False)
        for index, panel in enumerate(used):
            axis = axes[index // columns][index % columns]
            entries = [(impl, runs[reference_n]) for impl, runs in panels[panel].items() if reference_n in runs]
            entries.sort(key=lambda e: implementation_key(e[0]))
            names = [e[0] for e in entries]
            values = [e[1].gbps for e in entries]
            bars = axis.barh(range(len(entries)), values, color=[implementation_color(n) for n in names])
            axis.set_yticks(range(len(entries)))
            axis.set_yticklabels(names, fontsize=8)
            axis.invert_yaxis()
            for bar, (_, r) in zip(bars, entries):
                label = "%.0f GB/s" % r.gbps + (" (%.3f× copy)" % r.x_copy if r.x_copy is not None else "")
                axis.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, " " + label, va="center", fontsize=7)
            axis.set_xlabel("GB/s (read + write)")
            axis.set_xlim(0, max(values + [1.0]) * 1.35)
            axis.set_title("%s / %s" % panel)
        for index in range(len(used), rows * columns):
            axes[index // columns][index % columns].set_visible(False)
        figure.suptitle("%s %s at n = %s" % (op, dtype, format_n(reference_n)))
        figure.tight_layout()
        path = os.path.join(out_dir, "reference_%s_%s.png" % (op, dtype))
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written


def reference_tables(grouped, reference_n):
    lines = []
    for (op, dtype), panels in sorted(grouped.items()):
        for panel in [p for p in PANELS if p in panels] + sorted(p for p in panels if p not in PANELS):
            entries = [(impl, runs[reference_n]) for impl, runs in panels[panel].items() if reference_n in runs]
            if not entries:
                continue
            entries.sort(key=lambda e: implementation_key(e[0]))
            lines.append("### %s, %s, %s, %s, n = %s" % (op, dtype, panel[0], panel[1], format_n(reference_n)))
            lines.append("")
            lines.append("| implementation | GB/s | × copy | ms per call | noise (cv of repetitions) |")
            lines.append("|---|---|---|---|---|")
            for impl, r in entries:
                lines.append("| %s | %.0f | %s | %.3f | %s |" % (
                    impl, r.gbps, format_optional(r.x_copy, "%.3f"), r.seconds * 1e3,
                    format_optional(None if r.noise is None else 100 * r.noise, "%.2f%%")))
            lines.append("")
    return lines


def comparison_table(grouped, baseline, minimum_n):
    """hardact_auto against `baseline` per group: the worst GB/s ratio over sizes >= minimum_n."""
    lines = ["| op | dtype | placement | alignment | worst hardact_auto / %s | at n | median ratio |" % baseline,
             "|---|---|---|---|---|---|---|"]
    rows = 0
    for (op, dtype), panels in sorted(grouped.items()):
        for panel in [p for p in PANELS if p in panels] + sorted(p for p in panels if p not in PANELS):
            ours, theirs = panels[panel].get("hardact_auto", {}), panels[panel].get(baseline, {})
            ratios = [(ours[n].gbps / theirs[n].gbps, n) for n in ours
                      if n in theirs and n >= minimum_n and theirs[n].gbps > 0]
            if not ratios:
                continue
            worst = min(ratios)
            lines.append("| %s | %s | %s | %s | %.3f | %s | %.3f |" % (
                op, dtype, panel[0], panel[1], worst[0], format_n(worst[1]),
                statistics.median(r for r, _ in ratios)))
            rows += 1
    return lines if rows else []


def launch_tables(grouped):
    lines = []
    for (op, dtype), panels in sorted(grouped.items()):
        for panel in [p for p in PANELS if p in panels] + sorted(p for p in panels if p not in PANELS):
            sizes = sorted({n for runs in panels[panel].values() for n in runs})
            lines.append("### %s, %s, %s, %s: µs per call (back-to-back launches)" % (op, dtype, panel[0], panel[1]))
            lines.append("")
            lines.append("| implementation | " + " | ".join(format_n(n) for n in sizes) + " |")
            lines.append("|---|" + "---|" * len(sizes))
            for impl in sorted(panels[panel], key=implementation_key):
                runs = panels[panel][impl]
                cells = ["%.2f" % (runs[n].seconds * 1e6) if n in runs else "–" for n in sizes]
                lines.append("| %s | %s |" % (impl, " | ".join(cells)))
            lines.append("")
    return lines


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", nargs="+", help="Google Benchmark JSON files from hardact_bench --benchmark_out")
    parser.add_argument("--out", "--out-dir", dest="out", required=True, help="directory for the PNGs and bench_tables.md")
    parser.add_argument("--reference-n", type=int, default=REFERENCE_N,
                        help="element count of the reference shape (default 4096*393216)")
    args = parser.parse_args(argv)

    results, errors, context = load(args.json)
    if not results and not errors:
        print("plot_bench.py: no hardact_bench results in %s" % ", ".join(args.json), file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bandwidth = group(results, lambda r: r.calls == 1)
    launch_bound = group(results, lambda r: r.calls > 1)
    reference = group(results, lambda r: r.calls == 1 and r.n == args.reference_n)

    written = []
    sweeps = {key: panels for key, panels in bandwidth.items()
              if len({n for p in panels.values() for runs in p.values() for n in runs}) > 1}
    written += plot_lines(plt, sweeps, lambda r: r.gbps, "GB/s (read + write)", "bandwidth", "sweep", args.out,
                          reference_n=args.reference_n)
    written += plot_lines(plt, launch_bound, lambda r: r.seconds * 1e6, "µs per call", "time per call, back-to-back",
                          "launch", args.out)
    written += plot_reference(plt, reference, args.reference_n, args.out)

    lines = ["# hardact_bench results", ""]
    described = [(key, context.get(key)) for key in ("date", "gpu", "gpu_sms", "cuda_runtime", "cuda_driver",
                                                     "cub_version", "hardact_version", "hardact_sweep",
                                                     "hardact_repetitions", "host_name")]
    lines += ["- %s: %s" % (key, value) for key, value in described if value is not None]
    lines += ["- sources: %s" % ", ".join(os.path.basename(p) for p in args.json), ""]
    lines += ["GB/s counts bytes read + bytes written. × copy is the ratio to cudaMemcpyAsync "
              "device-to-device of the same bytes (aligned, out of place) measured in the same process.", ""]
    if reference:
        lines += ["## Reference shape", ""] + reference_tables(reference, args.reference_n)
    for baseline in ("cub", "thrust"):
        table = comparison_table(sweeps, baseline, 1 << 16)
        if table:
            lines += ["## hardact_auto against %s, sizes ≥ 2^16" % baseline, ""] + table + [""]
    if launch_bound:
        lines += ["## Launch-bound sizes", ""] + launch_tables(launch_bound)
    if errors:
        lines += ["## Failed benchmarks", ""] + ["- `%s`: %s" % item for item in sorted(errors.items())] + [""]
    table_path = os.path.join(args.out, "bench_tables.md")
    with open(table_path, "w") as f:
        f.write("\n".join(lines))
    written.append(table_path)

    for path in written:
        print(path)
    if errors:
        print("plot_bench.py: %d benchmarks had errors (listed in bench_tables.md)" % len(errors), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
