#!/usr/bin/env python3
"""Two builds of hardact_torch against each other: outputs bit for bit, and wall time per forward.

    python3 pytorch/bench/compare_package_versions.py --old SITE_A --new SITE_B
    python3 pytorch/bench/compare_package_versions.py --old SITE_A --new SITE_B --models lcnet_100 \
        --dtypes bfloat16 --batches 64 --rounds 3

SITE_A and SITE_B are folders that each hold an installed hardact_torch (for example
`pip install --target SITE ./pytorch`). Both register the same torch.ops.hardact operators, so they
cannot share a process: each run is a child process that imports one of them, and the runs
alternate old, new, new, old per round, which cancels a drift between processes as interleaving
cancels it within one.

A child builds each network (timm or torchvision, seeded random weights, BatchNorm statistics and
affine parameters drawn away from their defaults, eval, channels_last), applies
optimize_for_inference and times the rewrite eager and in a CUDA graph (cuda_graph_inference):
per implementation, --reps reps of --iters forwards between two synchronisations, in turn, in one
order in even reps and the reverse in odd ones. Before timing it records a digest of the rewrite's
output (cuDNN deterministic, no benchmark mode, so that the convolutions' algorithms are the same in
every process) and of the depthwise stage's operator over every filter, stride, dtype and
activation it covers.

Printed: per network, dtype and batch, each version's median ms per forward over all its runs with
the min-max, and new / old; then whether every digest is the same in every run of both versions.
Exit status: 0 the outputs are the same, 1 they differ or a child failed, 2 no GPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

DEPTHWISE_ACTIVATIONS = ("identity", "relu", "relu6", "hardsigmoid", "hardswish", "hardtanh")


def digest(*tensors) -> str:
    h = hashlib.sha256()
    for t in tensors:
        if t is None:
            h.update(b"none")
            continue
        t = t.detach().contiguous().cpu()
        h.update(str((tuple(t.shape), str(t.dtype))).encode())
        h.update(t.view(-1).view(__import__("torch").uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def build_network(name: str, seed: int):
    import torch
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
    from checklib import randomise_batchnorms
    torch.manual_seed(seed)
    if name.startswith("torchvision."):
        import torchvision
        model = getattr(torchvision.models, name.split(".", 1)[1])(weights=None)
    else:
        import timm
        model = timm.create_model(name, pretrained=False)
    # Narrower than the tests' draws: a deep random network's activations stay of order one.
    randomise_batchnorms(model, seed + 1, mean_std=0.1, variance=(0.75, 1.25), weight=(0.75, 1.25), bias_std=0.1)
    return model.eval()


def depthwise_digests(ha) -> dict[str, str]:
    import torch
    op = ha._C._depthwise_conv_scale_shift_activation
    # A build whose stage can also write x before its output takes that choice last: off here.
    choice = (False,) if "concatenate_input" in (op.__doc__ or "") else ()
    generator = torch.Generator(device="cuda").manual_seed(7)
    out = {}
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for k in (3, 5):
            for stride in (1, 2):
                for samples, channels, height, width in ((3, 12, 13, 11), (2, 240, 28, 28), (1, 1024, 7, 9)):
                    x = torch.randn(samples, channels, height, width, device="cuda", generator=generator).to(dtype)
                    x = x.contiguous(memory_format=torch.channels_last)
                    taps = torch.randn(k * k, channels, device="cuda", generator=generator) * 0.3
                    scale = torch.rand(channels, device="cuda", generator=generator) + 0.5
                    shift = torch.randn(channels, device="cuda", generator=generator) * 0.2
                    for activation in DEPTHWISE_ACTIVATIONS:
                        for with_mean in (False, True):
                            y, mean = op(x, taps, scale, shift, k, stride, k // 2, k // 2, activation, -0.5, 2.0,
                                         with_mean, *choice)
                            key = f"{str(dtype)[6:]} k{k} s{stride} {samples}x{channels}x{height}x{width} " \
                                  f"{activation}{' mean' if with_mean else ''}"
                            out[key] = digest(y, mean if with_mean else None)
    return out


def child(args) -> dict:
    sys.path.insert(0, args.child)
    import torch
    import hardact_torch as ha
    here = pathlib.Path(ha.__file__).resolve()
    if pathlib.Path(args.child).resolve() not in here.parents:
        raise SystemExit(f"compare_package_versions: imported {here}, not the package under {args.child}")
    result = {"package": str(here.parent), "digests": {}, "times": {}}
    result["digests"].update(depthwise_digests(ha))
    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16}
    for name in args.models:
        for dtype_name in args.dtypes:
            dtype = dtypes[dtype_name]
            for batch in args.batches:
                torch.backends.cudnn.benchmark = False
                torch.backends.cudnn.deterministic = True
                model = build_network(name, seed=11)
                model = model.to(device="cuda", dtype=dtype, memory_format=torch.channels_last)
                counts = ha.optimize_for_inference(model)
                generator = torch.Generator(device="cuda").manual_seed(batch)
                x = torch.randn(batch, 3, 224, 224, device="cuda", generator=generator).to(dtype)
                x = x.contiguous(memory_format=torch.channels_last)
                key = f"{name} {dtype_name} {batch}"
                with torch.no_grad():
                    y = model(x)
                    graph = ha.cuda_graph_inference(model, x)
                    y_graph = graph(x)
                result["digests"][key + " eager"] = digest(y)
                result["digests"][key + " graph"] = digest(y_graph)
                result["digests"][key + " counts"] = json.dumps(counts, sort_keys=True)
                torch.backends.cudnn.deterministic = False
                torch.backends.cudnn.benchmark = True
                with torch.no_grad():
                    for _ in range(3):
                        model(x)
                    graph = ha.cuda_graph_inference(model, x)
                    runs = {"eager": model, "graph": graph}
                    times = {kind: [] for kind in runs}
                    for rep in range(args.reps):
                        order = list(runs) if rep % 2 == 0 else list(reversed(runs))
                        for kind in order:
                            forward = runs[kind]
                            torch.cuda.synchronize()
                            start = time.perf_counter()
                            for _ in range(args.iters):
                                forward(x)
                            torch.cuda.synchronize()
                            times[kind].append((time.perf_counter() - start) * 1e3 / args.iters)
                result["times"][key] = times
                del model, graph, runs
                torch.cuda.empty_cache()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", help="folder holding the first build of hardact_torch")
    parser.add_argument("--new", help="folder holding the second build")
    parser.add_argument("--models", nargs="+",
                        default=["mobilenetv3_large_100", "lcnet_100", "torchvision.mobilenet_v3_large"])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--batches", nargs="+", type=int, default=[8, 64])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of old, new, new, old")
    parser.add_argument("--reps", type=int, default=11)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return 0
    import torch
    if not torch.cuda.is_available():
        print("compare_package_versions: no CUDA device")
        return 2
    print(f"compare_package_versions: {torch.cuda.get_device_name()}, torch {torch.__version__}; "
          f"old {args.old}, new {args.new}; {args.rounds} rounds of old new new old, "
          f"{args.reps} reps x {args.iters} forwards per run")
    runs = {"old": [], "new": []}
    order = ["old", "new", "new", "old"] * args.rounds
    passthrough = ["--models", *args.models, "--dtypes", *args.dtypes, "--batches", *map(str, args.batches),
                   "--reps", str(args.reps), "--iters", str(args.iters)]
    for version in order:
        site = args.old if version == "old" else args.new
        env = dict(os.environ, PYTHONPATH="")
        done = subprocess.run([sys.executable, __file__, "--child", site, *passthrough], env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"compare_package_versions: the {version} run failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}")
            return 1
        runs[version].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"old: {runs['old'][0]['package']}\nnew: {runs['new'][0]['package']}")
    print("| network, dtype, batch | old eager ms | new eager ms | new / old | old graph ms | new graph ms | new / old |")
    print("|---|---|---|---|---|---|---|")
    for key in runs["old"][0]["times"]:
        cells = []
        for kind in ("eager", "graph"):
            medians = {}
            for version in ("old", "new"):
                values = [t for run in runs[version] for t in run["times"][key][kind]]
                medians[version] = statistics.median(values)
                cells.append(f"{medians[version]:.3f} ({min(values):.3f}-{max(values):.3f})")
            cells.append(f"{medians['new'] / medians['old']:.3f}")
        print(f"| {key} | " + " | ".join(cells) + " |")
    reference = runs["old"][0]["digests"]
    differing = sorted({key for version in runs for run in runs[version]
                        for key in set(reference) | set(run["digests"])
                        if run["digests"].get(key) != reference.get(key)})
    graph_mismatch = [key for key in reference if key.endswith(" graph")
                      and reference[key] != reference[key[:-len(" graph")] + " eager"]]
    print(f"digests: {len(reference)} outputs (networks eager and in a graph, rewrite counts, "
          f"{sum(1 for k in reference if k.split()[0] in ('float32', 'float16', 'bfloat16'))} depthwise stage cases), "
          f"{len(order)} runs: {len(differing)} differ between runs or versions; "
          f"{len(graph_mismatch)} graph replays differ from eager")
    for key in differing[:20]:
        print("  differs:", key, {v: sorted({run['digests'].get(key) for run in runs[v]}) for v in runs})
    for key in graph_mismatch[:20]:
        print("  graph differs from eager:", key)
    return 0 if not differing and not graph_mismatch else 1


if __name__ == "__main__":
    sys.exit(main())
