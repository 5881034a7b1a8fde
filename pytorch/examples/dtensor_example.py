#!/usr/bin/env python3
"""hardact operators on DTensor-sharded activations, two GPUs, NCCL.

    torchrun --nproc-per-node=2 pytorch/examples/dtensor_example.py
    torchrun --nproc-per-node=2 pytorch/examples/dtensor_example.py --rows 512 --cols 65536   # quicker

A 4096 x 393216 activation (float32, then bfloat16; the same seeded values on every rank) is
distributed with Shard(1) and with Shard(0). Each op (hardsigmoid, hardtanh(-0.3, 0.7), hardswish,
relu6) runs on the DTensor forward and backward (autograd, with a grad sharded the same way), and
the in-place form too. Checked for each:
- the result (and the gradient) is still Shard(d) and no collective ran (CommDebugMode counts 0);
- the gathered result (full_tensor()) equals F.* on the whole tensor on one GPU, bit for bit
  (NaN matches NaN; all other bits equal), and so does the gathered gradient.
Then a tensor-parallel MLP (Linear colwise -> activation -> Linear rowwise, parallelize_module) with
hardact's HardSwish must run the same collectives as with F.hardswish (one all-reduce, no
all-gather) and give the same bits.

Each check prints PASS or FAIL (rank 0); the run ends with `N passed, M failed`. Exit status 0 only
when every check passed on every rank.
"""

from __future__ import annotations

import pathlib
import argparse
import os
import sys

# NVLink SHARP/multicast stays off on the lent machines: set before NCCL or symmetric memory start.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.tensor import DTensor, Shard, distribute_tensor  # noqa: E402
from torch.distributed.tensor.debug import CommDebugMode  # noqa: E402
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module  # noqa: E402

# checklib.py (comparison, test data, the installed package), shared with the tests: pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
from checklib import NAMES, differing, import_package, special_values  # noqa: E402

ha = import_package()
ops = torch.ops.hardact

CASES = [  # name, hardact call, F.* call
    ("hardsigmoid", lambda x: ops.hardsigmoid(x), F.hardsigmoid),
    ("hardtanh(-0.3, 0.7)", lambda x: ops.hardtanh(x, -0.3, 0.7), lambda x: F.hardtanh(x, -0.3, 0.7)),
    ("hardswish", lambda x: ops.hardswish(x), F.hardswish),
    ("relu6", lambda x: ops.relu6(x), F.relu6),
]
INPLACE = {"hardsigmoid": lambda x: ops.hardsigmoid_(x), "hardtanh(-0.3, 0.7)": lambda x: ops.hardtanh_(x, -0.3, 0.7),
           "hardswish": lambda x: ops.hardswish_(x), "relu6": lambda x: ops.relu6_(x)}


class Tally:
    def __init__(self, rank: int):
        self.rank, self.passed, self.failed = rank, 0, 0

    def check(self, ok: bool, what: str, detail: str = "") -> None:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        if self.rank == 0 or not ok:
            print(f"{'PASS' if ok else 'FAIL'} [rank {self.rank}] {what}{': ' + detail if detail else ''}", flush=True)


def seeded(rows: int, cols: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """The same values on every rank: a seeded CUDA generator, then the special values (NaN, +-inf,
    +-0, subnormals, the kinks) at every 997th position."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(rows, cols, generator=generator, device="cuda") * 4).to(dtype)
    specials = torch.tensor(special_values(dtype), dtype=torch.float64, device="cuda").to(dtype)
    flat = x.view(-1)
    positions = torch.arange(0, flat.numel(), 997, device="cuda")
    flat[positions] = specials[torch.arange(positions.numel(), device="cuda") % specials.numel()]
    return x


def bit_exact(got: torch.Tensor, expected: torch.Tensor) -> tuple[bool, str]:
    count = int(differing(got, expected).sum())
    return count == 0, "" if count == 0 else f"{count} of {got.numel()} elements differ"


def collectives(mode: CommDebugMode) -> str:
    counts = {str(op).split(".")[-1]: n for op, n in mode.get_comm_counts().items() if n}
    return ", ".join(f"{name} x{n}" for name, n in counts.items()) or "none"


def check_ops(tally: Tally, mesh, rows: int, cols: int, dtype: torch.dtype) -> None:
    x_full = seeded(rows, cols, dtype, seed=11)
    grad_full = seeded(rows, cols, dtype, seed=12)
    for dim in (1, 0):
        placement = [Shard(dim)]
        label = f"{NAMES[dtype]} {rows}x{cols} Shard({dim})"
        x = distribute_tensor(x_full, mesh, placement).requires_grad_()
        grad = distribute_tensor(grad_full, mesh, placement)
        for name, ours, reference in CASES:
            with CommDebugMode() as forward_comms:
                y = ours(x)
            tally.check(y.placements == (Shard(dim),) and forward_comms.get_total_counts() == 0,
                        f"{label} {name}: output stays Shard({dim}), no collective",
                        f"placements {y.placements}, collectives: {collectives(forward_comms)}")
            with CommDebugMode() as backward_comms:
                (dx,) = torch.autograd.grad(y, x, grad)
            tally.check(dx.placements == (Shard(dim),) and backward_comms.get_total_counts() == 0,
                        f"{label} {name}: gradient stays Shard({dim}), no collective",
                        f"placements {dx.placements}, collectives: {collectives(backward_comms)}")

            leaf = x_full.detach().clone().requires_grad_()
            expected = reference(leaf)
            (expected_dx,) = torch.autograd.grad(expected, leaf, grad_full)
            ok, detail = bit_exact(y.full_tensor(), expected)
            tally.check(ok, f"{label} {name}: gathered output == F.* on one GPU, bit for bit", detail)
            ok, detail = bit_exact(dx.full_tensor(), expected_dx)
            tally.check(ok, f"{label} {name}: gathered gradient == autograd of F.* on one GPU, bit for bit", detail)
            del y, dx, leaf, expected, expected_dx

            target = distribute_tensor(x_full, mesh, placement)  # a fresh copy to overwrite
            with CommDebugMode() as inplace_comms:
                returned = INPLACE[name](target)
            ok, detail = bit_exact(target.full_tensor(), reference(x_full))
            tally.check(returned is None and target.placements == (Shard(dim),) and
                        inplace_comms.get_total_counts() == 0 and ok,
                        f"{label} {name}_ in place: stays Shard({dim}), no collective, bit for bit",
                        f"collectives: {collectives(inplace_comms)}; {detail}")
            del target, returned
            torch.cuda.empty_cache()


class MLP(nn.Module):
    def __init__(self, width: int, hidden: int, activation: nn.Module):
        super().__init__()
        self.up, self.activation, self.down = nn.Linear(width, hidden), activation, nn.Linear(hidden, width)

    def forward(self, x):
        return self.down(self.activation(self.up(x)))


def check_tensor_parallel(tally: Tally, mesh) -> None:
    """Colwise up-projection leaves the hidden activation Shard(-1) as a DTensor; the activation must
    keep it so, and the rowwise down-projection then needs its one all-reduce, nothing more."""
    plan = {"up": ColwiseParallel(use_local_output=False), "down": RowwiseParallel(input_layouts=Shard(-1))}
    results = {}
    for label, activation in [("F.hardswish", nn.Hardswish()), ("hardact HardSwish", ha.HardSwish())]:
        torch.manual_seed(5)  # identical weights for both models, on every rank
        model = parallelize_module(MLP(1024, 8192, activation).cuda(), mesh, plan)
        x = torch.randn(64, 1024, generator=torch.Generator(device="cuda").manual_seed(6), device="cuda")
        with CommDebugMode() as comms:
            hidden = model.activation(model.up(x))
            out = model.down(hidden)
        results[label] = (out, collectives(comms), hidden.placements if isinstance(hidden, DTensor) else None)
    ours, theirs = results["hardact HardSwish"], results["F.hardswish"]
    sharded_last = ours[2] is not None and len(ours[2]) == 1 and isinstance(ours[2][0], Shard) and \
        ours[2][0].dim in (1, -1)
    tally.check(sharded_last, "tensor-parallel MLP: hidden activation after hardact stays sharded on the last dim",
                f"placements {ours[2]}")
    tally.check(ours[1] == theirs[1] and "all_gather" not in ours[1],
                "tensor-parallel MLP: same collectives as with F.hardswish, no all-gather",
                f"hardact: {ours[1]}; F.hardswish: {theirs[1]}")
    ok, detail = bit_exact(ours[0], theirs[0])
    tally.check(ok, "tensor-parallel MLP: output equals the F.hardswish model's, bit for bit", detail)
    if tally.rank == 0:
        print(f"tensor-parallel MLP collectives per forward: hardact {ours[1]}; F.hardswish {theirs[1]}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=393216)
    parser.add_argument("--dtypes", default="float32,bfloat16")
    args = parser.parse_args()
    if "LOCAL_RANK" not in os.environ:
        print("run with: torchrun --nproc-per-node=2 pytorch/examples/dtensor_example.py", file=sys.stderr)
        return 2

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    world = dist.get_world_size()
    mesh = init_device_mesh("cuda", (world,))
    tally = Tally(dist.get_rank())
    if tally.rank == 0:
        print(f"PyTorch {torch.__version__}, {world} x {torch.cuda.get_device_name()}, NCCL "
              f"{'.'.join(map(str, torch.cuda.nccl.version()))}; NCCL_NVLS_ENABLE={os.environ['NCCL_NVLS_ENABLE']} "
              f"TORCH_SYMM_MEM_DISABLE_MULTICAST={os.environ['TORCH_SYMM_MEM_DISABLE_MULTICAST']}", flush=True)
    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    for dtype_name in args.dtypes.split(","):
        check_ops(tally, mesh, args.rows, args.cols, dtypes[dtype_name])
    check_tensor_parallel(tally, mesh)

    counts = torch.tensor([tally.passed, tally.failed], device="cuda")
    dist.all_reduce(counts)
    if tally.rank == 0:
        print(f"\n{int(counts[0])} passed, {int(counts[1])} failed (summed over {world} ranks)", flush=True)
    dist.destroy_process_group()
    return 0 if int(counts[1]) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
