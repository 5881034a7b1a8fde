"""Shared by the tests, the benchmarks and the examples of pytorch/: bit-for-bit comparison, test data,
the installed package, the GPU's description. Not part of hardact_torch: each user puts this folder
on sys.path in one line (tests/conftest.py, bench/*.py, examples/dtensor_example.py)."""

from __future__ import annotations

import copy
import math
import sys

import torch
from torch import nn

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
NAMES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.float8_e4m3fn: "float8_e4m3fn", torch.float8_e5m2: "float8_e5m2",
}
BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
HARDTANH_BOUNDS = [(-1.0, 1.0), (0.0, 6.0), (-0.3, 0.7), (-2.5, -0.5), (0.5, 0.5)]
INSTALL_HINT = "python3 -m pip install --no-build-isolation ./pytorch   (from the repository root)"


def import_package():
    """The installed hardact_torch, or exit 3 with the install command (for the scripts)."""
    try:
        import hardact_torch
    except ImportError as error:
        print(f"hardact_torch is not installed or does not load ({error}).\nInstall it with: {INSTALL_HINT}",
              file=sys.stderr)
        sys.exit(3)
    return hardact_torch


def as_bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(BITS[t.element_size()])


def is_nan(t: torch.Tensor) -> torch.Tensor:
    return torch.isnan(t.float() if t.element_size() == 1 else t)


def differing(got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Mask of elements that differ: NaN against non-NaN, or different bits between non-NaNs."""
    got_nan, expected_nan = is_nan(got), is_nan(expected)
    return (got_nan != expected_nan) | (~expected_nan & (as_bits(got) != as_bits(expected)))


def show(t: torch.Tensor, index: int) -> str:
    flat = t.reshape(-1)
    bits = int(as_bits(flat[index: index + 1])) & ((1 << (8 * t.element_size())) - 1)
    return f"{flat[index].float().item()!r} (0x{bits:x})"


def mismatch_report(got: torch.Tensor, expected: torch.Tensor, *inputs: torch.Tensor) -> str:
    """'' when got equals expected bit for bit (NaN matching NaN), else the count and the first case.
    Shapes and dtypes must be equal; strides may differ (the values are compared)."""
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return f"shape/dtype {tuple(got.shape)} {got.dtype} vs {tuple(expected.shape)} {expected.dtype}"
    got, expected = got.contiguous(), expected.contiguous()
    mask = differing(got, expected).reshape(-1)
    count = int(mask.sum())
    if count == 0:
        return ""
    first = int(mask.nonzero()[0])
    shown_inputs = ", ".join(show(t.contiguous(), first) for t in inputs if t.shape == got.shape)
    return (f"{count} of {got.numel()} differ; first at flat index {first}: inputs {shown_inputs}, "
            f"got {show(got, first)}, expected {show(expected, first)}")


def raises(expected_type, call) -> str:
    """'' when call() raises expected_type, else what happened (a Checks record)."""
    try:
        call()
    except expected_type:
        return ""
    except Exception as error:  # noqa: BLE001  (another type is the failure being reported)
        return f"raised {type(error).__name__} instead of {expected_type.__name__}: {error}"
    return f"no error (expected {expected_type.__name__})"


def special_values(dtype: torch.dtype) -> list[float]:
    """Values where hand-written kernels go wrong: NaN, infinities, signed zeros, subnormals, extremes,
    the kinks of every op at +-3 and at the hardtanh bounds used in the checks."""
    info = torch.finfo(dtype)
    tiny = info.tiny
    return [math.nan, math.inf, -math.inf, 0.0, -0.0, tiny, -tiny, tiny / 4, -tiny / 4, info.max, info.min,
            -3.0, 3.0, -6.0, 6.0, -1.0, 1.0, -0.3, 0.7, -2.5, -0.5, 0.5, 2.9999998, -2.9999998,
            3.0000002, -3.0000002, 1e-30, -1e-30, 0.1]


def salted_random(numel: int, dtype: torch.dtype, generator: torch.Generator, scale: float = 4.0,
                  device: str = "cuda") -> torch.Tensor:
    """Normal values times `scale`, with the special values at the start and at ~2% of positions."""
    wide = torch.float64 if dtype == torch.float64 else torch.float32  # float32 keeps big tensors small
    x = (torch.randn(numel, generator=generator, device=device, dtype=wide) * scale).to(dtype)
    if numel == 0:
        return x
    specials = torch.tensor(special_values(dtype), dtype=torch.float64, device=device).to(dtype)
    head = min(numel, specials.numel())
    x[:head] = specials[:head]
    salted = torch.randint(0, numel, (numel // 50,), generator=generator, device=device)
    x[salted] = specials[torch.arange(salted.numel(), device=device) % specials.numel()]
    return x


def every_pattern(dtype: torch.dtype, device: str = "cuda") -> torch.Tensor:
    """All 65,536 values of a 16-bit dtype."""
    return torch.arange(-32768, 32768, dtype=torch.int32, device=device).to(torch.int16).view(dtype)


def describe_gpu() -> str:
    if not torch.cuda.is_available():
        return f"PyTorch {torch.__version__}, no CUDA GPU visible"
    return f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}), {torch.cuda.get_device_name()}"


class Custom(nn.Module):
    """A module no rewrite knows (its forward could be anything): put in a block, the block must be
    left alone."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


def randomise_batchnorms(model: nn.Module, seed: int = 7, convolution_biases: bool = False, mean_std: float = 0.5,
                         variance: tuple[float, float] = (0.5, 2.0), weight: tuple[float, float] = (0.5, 1.5),
                         bias_std: float = 0.3) -> nn.Module:
    """BatchNorm statistics and affine parameters away from their defaults (running_mean ~ N(0, mean_std),
    running_var ~ U(variance), weight ~ U(weight), bias ~ N(0, bias_std)), and with convolution_biases
    the biases of nn.Conv2d ~ N(0, 0.3), drawn in module order, so that the folds are not trivial.
    Narrower draws keep a deep random network's activations of order one, where its float32 outputs
    should measure rounding rather than amplify it."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=generator) * mean_std)
                m.running_var.copy_(torch.rand(n, generator=generator) * (variance[1] - variance[0]) + variance[0])
                if m.weight is not None:
                    m.weight.copy_(torch.rand(n, generator=generator) * (weight[1] - weight[0]) + weight[0])
                    m.bias.copy_(torch.randn(n, generator=generator) * bias_std)
            elif convolution_biases and isinstance(m, nn.Conv2d) and m.bias is not None:
                m.bias.copy_(torch.randn(m.bias.shape, generator=generator) * 0.3)
    return model


def fuse_blocks_in_order(model: nn.Module, blocks_first: bool) -> int:
    """fuse_blocks before, or after, fuse_batchnorm_activation and fuse_squeeze_excitation (a block
    rewritten module by module first must still fuse whole); fuse_blocks' count."""
    import hardact_torch as ha
    if blocks_first:
        fused = ha.fuse_blocks(model)
    ha.fuse_batchnorm_activation(model)
    ha.fuse_squeeze_excitation(model)
    return fused if blocks_first else ha.fuse_blocks(model)


def record_blocks_fused(checks, base: nn.Module, name: str, count_blocks, fused_type: type) -> None:
    """Records that fuse_blocks rewrites every block count_blocks finds in base, before and after the
    module-level rewrites (fuse_blocks_in_order); that no BatchNorm or squeeze-excitation module is
    left inside a fused_type block; that a second fuse_blocks rewrites nothing; and that
    optimize_for_inference fuses the blocks before the squeeze-excitations."""
    import hardact_torch as ha
    blocks = count_blocks(base)
    for order in ("blocks first", "blocks last"):
        model = copy.deepcopy(base)
        fused = fuse_blocks_in_order(model, order == "blocks first")
        checks.record("" if fused == blocks > 0 and count_blocks(model) == 0 else
                      f"fused {fused} of {blocks}, {count_blocks(model)} left", f"{name} {order}: every block fused")
        inside = [type(m).__name__ for block in model.modules() if isinstance(block, fused_type)
                  for m in block.modules()
                  if isinstance(m, (nn.modules.batchnorm._BatchNorm, ha.HardSigmoidSqueezeExcitation))]
        checks.record("" if not inside else f"found {sorted(set(inside))}",
                      f"{name} {order}: no BatchNorm or squeeze-excitation module inside a fused block")
        checks.record("" if ha.fuse_blocks(model) == 0 else "rewrote again", f"{name} {order}: fuse_blocks twice")
    counts = ha.optimize_for_inference(copy.deepcopy(base))
    checks.record("" if counts["blocks"] == blocks and counts["squeeze_excitations"] == 0 else f"counts {counts}",
                  f"{name}: optimize_for_inference fuses the blocks first")


def edited_block_left_alone(base: nn.Module, edit, classes: tuple[str, ...]) -> str:
    """'' when, in a copy of base whose one block edit(model) changed, fuse_blocks fuses every other
    block of the classes named and leaves that one as it is; else what it did."""
    import hardact_torch as ha
    blocks = sum(1 for m in base.modules() if type(m).__name__ in classes)
    model = copy.deepcopy(base)
    edit(model)
    edited = [m for m in model.modules() if type(m).__name__ in classes]
    fused = ha.fuse_blocks(model)
    kept = [m for m in model.modules() if type(m).__name__ in classes]
    if fused == blocks - 1 and len(kept) == 1 and any(kept[0] is m for m in edited):
        return ""
    return f"fused {fused} of {blocks}, {len(kept)} left"
