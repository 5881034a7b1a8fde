"""Tests of the block-level fusion: the operators scale_shift_residual_activation and
scale_shift_activation_mean, the FusedInvertedResidual module and fuse_blocks.

    pytest pytorch/tests/test_fused_blocks.py              # the tests marked cuda skip without a GPU
    pytest pytorch/tests/test_fused_blocks.py -k "mean"    # the mean's tests only

Without a GPU: schemas and kernels registered; fake kernels (meta tensors) give the real kernels'
shapes and strides and raise their errors; both operators differentiate on meta tensors (the C++
backward formulas run), for the mean with y's gradient, the mean's or both; a CPU x raises an error
naming functions that exist; torch.compile(fullgraph=True) traces the functions to aten ops, whose
values are the documented expressions; the DTensor sharding rules (CPU stand-in kernels);
fuse_blocks refuses a training model and, with timm or torchvision installed, rewrites every
inverted-residual and depthwise-separable block of their MobileNetV3 / LCNet, leaves alone a block
holding anything it does not know, leaves nothing for fuse_batchnorm_activation or
fuse_squeeze_excitation to redo inside a fused block, and gives the original network's outputs
within 1e-4 (relative) in float32 on the CPU under torch.compile (the functions' aten expressions).
With a GPU: scale_shift_residual_activation bit for bit against `act(x * scale + shift + residual)`
computed in float (double for float64) and rounded once, and in float32 against eager's ops, in
every dtype, layout and activation; scale_shift_activation_mean's y bit for bit scale_shift_activation's
and its mean against y's mean (sizes 7x7, 14x14, 1x1, 3x5, batch 1 and 4, NCHW, channels-last,
3-D, gapped; empty inputs as torch.mean); output strides equal the fake kernels'; refusals;
torch.library.opcheck; gradients against gradcheck (float64) and eager's autograd (float32); a CUDA
graph capture; the float32 excitation's products (TF32 as cuDNN's setting says; a shape's cached
cuBLASLt plan with each call's bias, from four threads); the one-kernel
depthwise stage against float64 (odd sizes, every filter and stride it takes, its means, refusals,
and a block taking it only without gradients); real networks
rewritten (float32, TF32 off, both layouts): within 1e-4 of the original's largest output, bfloat16
differences printed.
"""

from __future__ import annotations

import copy
import re
import threading

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hardact_torch as ha
from checklib import (FLOAT_DTYPES, NAMES, Custom, edited_block_left_alone, record_blocks_fused, mismatch_report,
                      raises, randomise_batchnorms, salted_random)
from test_fused import (ACTIVATIONS, channel_view, compute_dtype, layout_report, layouts, meta_like,
                        reference_activation, reference_scale_shift)

ops = torch.ops.hardact
SEED = 41

# (N, C, H, W) of the mean's tests: odd and square spatial sizes, one position, one sample.
MEAN_SHAPES = [(4, 16, 7, 7), (1, 16, 14, 14), (4, 24, 1, 1), (4, 8, 3, 5), (1, 3, 7, 7), (2, 96, 28, 28)]

# The networks whose blocks fuse_blocks knows, and how their blocks are named.
REAL_MODELS = [("timm", "mobilenetv3_large_100"), ("timm", "mobilenetv3_small_100"), ("timm", "lcnet_100"),
               ("torchvision", "mobilenet_v3_large"), ("torchvision", "mobilenet_v3_small")]
BLOCK_CLASSES = ("InvertedResidual", "DepthwiseSeparableConv")


def reference_residual(x, scale, shift, residual, activation, min_val, max_val):
    """act(x * scale + shift + residual) in the compute type, each step rounded, then rounded once to x's dtype."""
    ct = compute_dtype(x.dtype)
    z = x.to(ct)
    if scale is not None:
        z = z * channel_view(scale, x).to(ct) + channel_view(shift, x).to(ct)
    return reference_activation(z + residual.to(ct), activation, min_val, max_val).to(x.dtype)


def spatial_dims(x: torch.Tensor) -> tuple[int, ...]:
    return tuple(range(2, x.dim()))


def mean_report(got: torch.Tensor, y: torch.Tensor) -> str:
    """'' when got (N, C), in y's dtype, is y's mean over its dims after 1 computed in the compute type,
    within the rounding to y's dtype (16-bit: one unit) and the summation order."""
    ct = compute_dtype(y.dtype)
    expected = y.to(ct).mean(spatial_dims(y))
    if got.shape != expected.shape or got.dtype != y.dtype:
        return f"shape/dtype {tuple(got.shape)} {got.dtype}, expected {tuple(expected.shape)} {y.dtype}"
    scale = y.to(ct).abs().max().item() if y.numel() else 1.0
    rtol = {torch.float64: 1e-12, torch.float32: 1e-5}.get(y.dtype, torch.finfo(y.dtype).eps)
    atol = (1e-13 if y.dtype == torch.float64 else 1e-6) * max(scale, 1.0)
    if torch.allclose(got.to(ct), expected, rtol=rtol, atol=atol, equal_nan=True):
        return ""
    difference = (got.to(ct) - expected).abs().nan_to_num(float("inf"))
    worst = int(difference.argmax())
    return (f"mean differs: largest difference {difference.max().item():.3g} at {worst}: got "
            f"{got.reshape(-1)[worst].item()!r}, expected {expected.reshape(-1)[worst].item()!r}")


def gentle_batchnorms(model: nn.Module) -> None:
    """Random BatchNorm statistics and affine parameters that keep a random network's activations of
    order one, so that its float32 outputs are a fair measure of the rewrite's rounding (the wider
    draws of test_fused's randomise_batchnorms amplify rounding to percents through depth)."""
    randomise_batchnorms(model, seed=11, mean_std=0.1, variance=(0.5, 1.5), weight=(0.5, 1.5), bias_std=0.1)


def create_timm_model(name: str) -> nn.Module:
    """timm's network `name` with random weights; skips the test when timm, or the installed timm's
    version of the network, is missing."""
    timm = pytest.importorskip("timm")
    if name not in timm.list_models():
        pytest.skip(f"timm {timm.__version__} has no {name}")
    return timm.create_model(name, pretrained=False)


def build(library: str, name: str) -> nn.Module:
    """A real network with random weights and gentle BatchNorms, in eval mode, on the CPU; skips the
    test when its library, or the network, is missing."""
    if library == "timm":
        torch.manual_seed(0)
        model = create_timm_model(name)
    else:
        models = pytest.importorskip("torchvision.models")
        torch.manual_seed(0)
        model = getattr(models, name)(weights=None)
    gentle_batchnorms(model)
    return model.eval()


def count_blocks(model: nn.Module) -> int:
    return sum(1 for m in model.modules() if type(m).__name__ in BLOCK_CLASSES)


# ---- no GPU --------------------------------------------------------------------------------------

def test_registration(checks) -> None:
    for name in ("scale_shift_residual_activation", "scale_shift_activation_mean"):
        for key in ("CUDA", "Autograd", "Meta"):
            has = torch._C._dispatch_has_kernel_for_dispatch_key(f"hardact::{name}", key)
            checks.record("" if has else "missing", f"{name} has a {key} kernel")
        checks.record("" if name in ha._registrations.FUSED_OPS else "missing", f"{name} in FUSED_OPS")
    for name in ("scale_shift_residual_activation", "scale_shift_activation_mean", "FusedInvertedResidual",
                 "fuse_blocks", "optimize_for_inference"):
        checks.record("" if name in ha.__all__ and hasattr(ha, name) else "missing", f"hardact_torch.{name} exported")
    schema = str(ops.scale_shift_activation_mean.default._schema)
    checks.record("" if schema.endswith("-> (Tensor, Tensor)") else schema, "scale_shift_activation_mean returns two")
    schema = str(ops.scale_shift_residual_activation.default._schema)
    checks.record("" if "Tensor residual" in schema and 'str activation="identity"' in schema else schema,
                  "scale_shift_residual_activation's schema")


def test_fake_kernels(checks) -> None:
    for layout, x in (("NCHW", torch.empty(2, 6, 5, 7, device="meta")),
                      ("channels-last", torch.empty(2, 6, 5, 7, device="meta").contiguous(
                          memory_format=torch.channels_last))):
        p = torch.empty(6, device="meta")
        y = ops.scale_shift_residual_activation(x, p, p, torch.empty_like(x), "hardswish")
        checks.record("" if y.shape == x.shape and y.stride() == x.stride() else f"strides {y.stride()}",
                      f"fake scale_shift_residual_activation {layout}: empty_like(x)")
        y, mean = ops.scale_shift_activation_mean(x, p, p, "relu")
        checks.record("" if y.shape == x.shape and y.stride() == x.stride() else f"strides {y.stride()}",
                      f"fake scale_shift_activation_mean {layout}: y as empty_like(x)")
        checks.record("" if mean.shape == (2, 6) and mean.is_contiguous() and mean.dtype == x.dtype
                      else f"mean {tuple(mean.shape)} {mean.stride()} {mean.dtype}",
                      f"fake scale_shift_activation_mean {layout}: mean (N, C), contiguous, x's dtype")
    x = torch.empty(2, 6, 5, 5, device="meta")
    p = torch.empty(6, device="meta")
    for what, call, error in (
            ("residual of another shape", lambda: ops.scale_shift_residual_activation(
                x, p, p, torch.empty(2, 6, 5, 4, device="meta")), ValueError),
            ("residual of another dtype", lambda: ops.scale_shift_residual_activation(
                x, p, p, torch.empty_like(x, dtype=torch.float64)), TypeError),
            ("residual: a scale without a shift", lambda: ops.scale_shift_residual_activation(
                x, p, None, torch.empty_like(x)), ValueError),
            ("residual: a shift without a scale", lambda: ops.scale_shift_residual_activation(
                x, None, p, torch.empty_like(x)), ValueError),
            ("residual: a scale of the wrong length", lambda: ops.scale_shift_residual_activation(
                x, torch.empty(5, device="meta"), p, torch.empty_like(x)), ValueError),
            ("residual: unknown activation", lambda: ops.scale_shift_residual_activation(
                x, p, p, torch.empty_like(x), "gelu"), ValueError),
            ("mean: 2-D x", lambda: ops.scale_shift_activation_mean(torch.empty(4, 6, device="meta"), p, p),
             ValueError),
            ("mean: a scale without a shift", lambda: ops.scale_shift_activation_mean(x, p, None), ValueError),
            ("mean: a shift of the wrong length", lambda: ops.scale_shift_activation_mean(
                x, None, torch.empty(7, device="meta")), ValueError),
            ("mean: hardtanh bounds reversed", lambda: ops.scale_shift_activation_mean(
                x, None, p, "hardtanh", 1.0, 0.0), ValueError),
            ("mean: integer x", lambda: ops.scale_shift_activation_mean(
                torch.empty(2, 6, 5, 5, device="meta", dtype=torch.int32), None, None), TypeError)):
        checks.record(raises(error, call), f"fake: {what} refused")


def test_backward_on_meta(checks) -> None:
    """The C++ backward formulas run on meta tensors (shapes only): every input's gradient has its
    input's shape, for the residual op, and for the mean op with y's gradient, the mean's or both."""
    def leaves(*shapes):
        return [torch.empty(shape, device="meta", requires_grad=True) for shape in shapes]

    for shape in ((3, 6, 5, 5), (3, 6, 11)):
        x, s, t, r = leaves(shape, (6,), (6,), shape)
        try:
            grads = torch.autograd.grad(ha.scale_shift_residual_activation(x, s, t, r, "hardswish"), (x, s, t, r),
                                        torch.empty(shape, device="meta"))
            report = "" if [g.shape for g in grads] == [v.shape for v in (x, s, t, r)] else \
                f"shapes {[tuple(g.shape) for g in grads]}"
        except Exception as error:  # noqa: BLE001
            report = f"{type(error).__name__}: {error}"
        checks.record(report, f"scale_shift_residual_activation backward on meta, x {shape}")
        for used in ("y", "mean", "both"):
            x, s, t = leaves(shape, (6,), (6,))
            try:
                y, mean = ha.scale_shift_activation_mean(x, s, t, "relu6")
                outputs = {"y": [y], "mean": [mean], "both": [y, mean]}[used]
                grads = torch.autograd.grad(outputs, (x, s, t), [torch.empty_like(o) for o in outputs])
                report = "" if [g.shape for g in grads] == [v.shape for v in (x, s, t)] else \
                    f"shapes {[tuple(g.shape) for g in grads]}"
            except Exception as error:  # noqa: BLE001
                report = f"{type(error).__name__}: {error}"
            checks.record(report, f"scale_shift_activation_mean backward on meta, x {shape}, gradient of {used}")


def test_cpu_error_names_existing_functions(checks) -> None:
    x, p = torch.randn(2, 4, 3, 3), torch.randn(4)
    for what, call in (("scale_shift_residual_activation", lambda: ha.scale_shift_residual_activation(x, p, p, x)),
                       ("scale_shift_activation_mean", lambda: ha.scale_shift_activation_mean(x, p, p))):
        try:
            call()
            report = "did not raise"
        except ValueError as error:
            message = str(error)
            missing = [name for name in re.findall(r"torch\.nn\.functional\.(\w+)", message) if not hasattr(F, name)]
            report = (f"names functions that do not exist: {missing}: {message}" if missing else
                      "" if "torch operators" in message else f"does not give the expression: {message}")
        except Exception as error:  # noqa: BLE001
            report = f"raised {type(error).__name__} ({error}), expected ValueError"
        checks.record(report, f"{what} on a CPU tensor: ValueError naming what to use")


def test_compile_tracing(checks) -> None:
    """Under torch.compile (fullgraph) the functions are aten expressions, on the CPU too: no hardact
    op in the graph, and the values are the documented expressions (the mean: y's)."""
    seen = []

    def backend(gm, example_inputs):
        seen.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    generator = torch.Generator().manual_seed(SEED)
    x, r = (torch.randn(2, 6, 5, 7, generator=generator) for _ in range(2))
    s, t = torch.rand(6, generator=generator) + 0.5, torch.randn(6, generator=generator)

    def fn(x, r, s, t):
        y, mean = ha.scale_shift_activation_mean(x, s, t, "hardswish")
        return ha.scale_shift_residual_activation(y, s, t, r, "relu6"), mean

    try:
        torch._dynamo.reset()
        out, mean = torch.compile(fn, backend=backend, fullgraph=True)(x, r, s, t)
        checks.record("" if not any("hardact" in name for name in seen) else f"hardact ops in graph: {seen}",
                      "compiled functions trace to aten ops (fullgraph)")
        y = F.hardswish(x * channel_view(s, x) + channel_view(t, x))
        checks.record(mismatch_report(out, F.relu6(y * channel_view(s, x) + channel_view(t, x) + r), x),
                      "compiled scale_shift_residual_activation: act(x * scale + shift + residual)")
        checks.record(mismatch_report(mean, y.mean((2, 3))), "compiled scale_shift_activation_mean: y.mean((2, 3))")
    except Exception as error:  # noqa: BLE001
        checks.record(f"{type(error).__name__}: {error}", "compiled functions trace (fullgraph)")


def test_dtensor_sharding_rules(checks) -> None:
    """On a fake two-rank process group with CPU stand-in kernels: the residual op keeps x's Shard(d),
    d != 1, with the residual sharded alike; the mean op keeps Shard(0) (batch) for y and the mean;
    no collective."""
    try:
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Replicate, Shard, distribute_tensor
        from torch.distributed.tensor.debug import CommDebugMode
        from torch.testing._internal.distributed.fake_pg import FakeStore
    except ImportError as error:
        pytest.skip(f"torch.distributed not usable here ({error})")
    if not ha.DTENSOR_SHARDING_REGISTERED:
        pytest.skip("the DTensor sharding rules are not registered in this PyTorch")
    library = torch.library.Library("hardact", "IMPL")
    library.impl("scale_shift_residual_activation",
                 lambda x, s, t, r, activation="identity", lo=-1.0, hi=1.0:
                 reference_residual(x, s, t, r, activation, lo, hi), "CPU")

    def mean_stand_in(x, s=None, t=None, activation="identity", lo=-1.0, hi=1.0):
        y = reference_scale_shift(x, s, t, activation, lo, hi)
        return y, y.mean(spatial_dims(x))

    library.impl("scale_shift_activation_mean", mean_stand_in, "CPU")
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    try:
        mesh = init_device_mesh("cpu", (2,))
        x_full, s, t = torch.randn(4, 6, 4, 4), torch.rand(6) + 0.5, torch.randn(6)
        sd, td = (distribute_tensor(p, mesh, [Replicate()]) for p in (s, t))
        for dim in (0, 2, 3):
            x = distribute_tensor(x_full, mesh, [Shard(dim)])
            with CommDebugMode() as comms:
                y = ops.scale_shift_residual_activation(x, sd, td, x, "hardswish")
            checks.record("" if y.placements == (Shard(dim),) else f"placements {y.placements}",
                          f"DTensor Shard({dim}) scale_shift_residual_activation stays Shard({dim})")
            checks.record("" if comms.get_total_counts() == 0 else f"collectives {comms.get_comm_counts()}",
                          f"DTensor Shard({dim}) scale_shift_residual_activation: no collective")
        for placement in (Shard(0), Replicate()):
            x = distribute_tensor(x_full, mesh, [placement])
            with CommDebugMode() as comms:
                y, mean = ops.scale_shift_activation_mean(x, sd, td, "relu")
            checks.record("" if y.placements == mean.placements == (placement,) else
                          f"placements {y.placements}, {mean.placements}",
                          f"DTensor {placement} scale_shift_activation_mean: y and mean stay {placement}")
            checks.record("" if comms.get_total_counts() == 0 else f"collectives {comms.get_comm_counts()}",
                          f"DTensor {placement} scale_shift_activation_mean: no collective")
    finally:
        dist.destroy_process_group()
        library._destroy()


def test_fuse_blocks_refuses_training(checks) -> None:
    checks.record(raises(RuntimeError, lambda: ha.fuse_blocks(nn.Sequential(nn.Conv2d(3, 3, 1)))),
                  "fuse_blocks refuses a model in training mode")
    checks.record(raises(RuntimeError, lambda: ha.optimize_for_inference(nn.Sequential(nn.Conv2d(3, 3, 1)))),
                  "optimize_for_inference refuses a model in training mode")
    model = nn.Sequential(nn.Conv2d(3, 8, 1), nn.BatchNorm2d(8), nn.ReLU()).eval()
    checks.record("" if ha.fuse_blocks(model) == 0 else "rewrote something", "no known block: nothing rewritten")


@pytest.mark.parametrize("library, name", REAL_MODELS)
def test_fuse_blocks_structure(checks, library, name) -> None:
    """Every block of the network is rewritten, in either order with the other rewrites; afterwards
    the other rewrites find nothing inside the fused blocks, and a second fuse_blocks nothing at all."""
    base = build(library, name)
    record_blocks_fused(checks, base, name, count_blocks, ha.FusedInvertedResidual)


def unknown_variants(library: str) -> list[tuple[str, callable]]:
    """(what, edit): an edit of one block of a fresh model that fuse_blocks must not rewrite."""
    def first(model, predicate):
        return next(m for m in model.modules() if type(m).__name__ in BLOCK_CLASSES and predicate(m))

    def untracked(bn):
        bn.track_running_stats = False
        bn.running_mean = bn.running_var = None

    if library == "timm":
        has_se = lambda m: type(m.se).__name__ == "SqueezeExcite"  # noqa: E731
        return [
            ("a custom squeeze-excitation", lambda model: setattr(first(model, has_se), "se",
                                                                  Custom(first(model, has_se).se))),
            ("a squeeze-excitation gated by a sigmoid", lambda model: setattr(
                first(model, has_se).se, "gate", nn.Sigmoid())),
            ("a squeeze-excitation with a 3x3 reduction", lambda model: setattr(
                first(model, has_se).se, "conv_reduce", nn.Conv2d(first(model, has_se).se.conv_reduce.in_channels,
                                                                  first(model, has_se).se.conv_reduce.out_channels,
                                                                  3, padding=1))),
            ("anti-aliasing", lambda model: setattr(first(model, lambda m: True), "aa", nn.AvgPool2d(1))),
            ("a BatchNorm without running statistics", lambda model: untracked(first(model, lambda m: True).bn1)),
            ("an activation hardact does not fuse", lambda model: setattr(first(model, lambda m: True).bn1, "act",
                                                                           nn.SiLU())),
            ("an extra child module", lambda model: setattr(first(model, lambda m: True), "extra", nn.Identity())),
            ("a convolution that is a custom module", lambda model: setattr(
                first(model, lambda m: True), "conv_dw", Custom(first(model, lambda m: True).conv_dw))),
            ("a submodule in training mode", lambda model: first(model, lambda m: True).bn1.train()),
        ]
    has_se = lambda m: len(m.block) >= 3 and type(m.block[-2]).__name__ == "SqueezeExcitation"  # noqa: E731
    return [
        ("a custom squeeze-excitation", lambda model: first(model, has_se).block.__setitem__(
            -2, Custom(first(model, has_se).block[-2]))),
        ("a squeeze-excitation gated by a sigmoid", lambda model: setattr(
            first(model, has_se).block[-2], "scale_activation", nn.Sigmoid())),
        ("a BatchNorm without running statistics", lambda model: untracked(first(model, lambda m: True).block[0][1])),
        ("an activation hardact does not fuse", lambda model: first(model, lambda m: True).block[0].__setitem__(
            2, nn.SiLU())),
        ("an extra layer", lambda model: first(model, lambda m: True).block.append(nn.Identity())),
        ("a submodule in training mode", lambda model: first(model, lambda m: True).block[-1].train()),
    ]


@pytest.mark.parametrize("library, name", [("timm", "mobilenetv3_small_100"), ("torchvision", "mobilenet_v3_small")])
def test_fuse_blocks_leaves_unknown_blocks(checks, library, name) -> None:
    """A block holding something fuse_blocks cannot prove equivalent stays as it is; the others fuse."""
    base = build(library, name)
    for what, edit in unknown_variants(library):
        checks.record(edited_block_left_alone(base, edit, BLOCK_CLASSES), f"{name} with {what}: that block left alone")


@pytest.mark.parametrize("library, name", REAL_MODELS)
def test_rewrite_on_cpu_compiled(checks, library, name) -> None:
    """The rewritten network (fuse_blocks, then the other rewrites) against the original, on the CPU
    under torch.compile(fullgraph=True, backend="eager"), where the functions are their aten
    expressions: the same function up to rounding, in both layouts (float32, relative to the
    largest output)."""
    base = build(library, name)
    rewritten = copy.deepcopy(base)
    ha.optimize_for_inference(rewritten)
    x = torch.randn(2, 3, 160, 160, generator=torch.Generator().manual_seed(SEED))
    for layout, memory_format in (("NCHW", torch.contiguous_format), ("channels-last", torch.channels_last)):
        xl = x.contiguous(memory_format=memory_format)
        with torch.no_grad():
            expected = copy.deepcopy(base).to(memory_format=memory_format)(xl)
            torch._dynamo.reset()
            got = torch.compile(copy.deepcopy(rewritten).to(memory_format=memory_format), backend="eager",
                                fullgraph=True)(xl)
        relative = ((got - expected).abs().max() / expected.abs().max()).item()
        checks.record("" if relative <= 1e-4 else f"relative difference {relative:.3g}",
                      f"{name} rewritten, compiled on the CPU, {layout}: within 1e-4 of the original")


# ---- GPU -----------------------------------------------------------------------------------------

@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=NAMES.get)
def test_residual_forward(checks, generator, dtype) -> None:
    """Every layout and activation bit for bit against the documented expression (and, in float32,
    eager's ops); parameters of x's dtype (16-bit) and a residual in another layout too; output
    strides those of the fake kernel and empty_like(x)."""
    for layout, x in layouts(dtype, generator):
        c = x.shape[1]
        scale = torch.randn(c, device="cuda", generator=generator)
        shift = torch.randn(c, device="cuda", generator=generator)
        residual = torch.randn(x.shape, device="cuda", generator=generator).to(dtype)
        residuals = [("residual", residual)]
        if x.dim() == 4:
            residuals.append(("residual in the other layout", residual.contiguous(
                memory_format=torch.contiguous_format if x.is_contiguous() else torch.channels_last)))
        for activation, lo, hi in ACTIVATIONS:
            for form, s, t in (("scale+shift", scale, shift), ("none", None, None)):
                for kind, r in residuals:
                    got = ha.scale_shift_residual_activation(x, s, t, r, activation, lo, hi)
                    what = f"scale_shift_residual_activation {form} {activation} {NAMES[dtype]} {layout}, {kind}"
                    checks.record(mismatch_report(got, reference_residual(x, s, t, r, activation, lo, hi), x), what)
                    if dtype == torch.float32 and form != "none":
                        z = x * channel_view(s, x) + channel_view(t, x) + r
                        checks.record(mismatch_report(got, reference_activation(z, activation, lo, hi), x),
                                      what + " vs eager ops")
                got = ha.scale_shift_residual_activation(x, s, t, residual, activation, lo, hi)
                checks.record(layout_report(got, x, lambda m: ops.scale_shift_residual_activation(
                    m, None if s is None else s.to("meta"), None if t is None else t.to("meta"),
                    torch.empty_like(m), activation, lo, hi)),
                    f"scale_shift_residual_activation {form} {activation} {NAMES[dtype]} {layout} layout")
            if dtype in (torch.float16, torch.bfloat16):
                s, t = scale.to(dtype), shift.to(dtype)
                got = ha.scale_shift_residual_activation(x, s, t, residual, activation, lo, hi)
                checks.record(mismatch_report(got, reference_residual(x, s, t, residual, activation, lo, hi), x),
                              f"scale_shift_residual_activation {NAMES[dtype]} parameters {activation} {layout}")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=NAMES.get)
def test_mean_forward(checks, generator, dtype) -> None:
    """y bit for bit scale_shift_activation's, the mean y's within rounding, for every shape of
    MEAN_SHAPES in NCHW, channels-last, as 3-D (N, C, H * W) and gapped (non-dense) x, each form and
    activation; strides those of the fake kernel (y: empty_like(x); mean: contiguous (N, C))."""
    for shape in MEAN_SHAPES:
        n, c, h, w = shape
        base = (torch.randn(n, c, h, 2 * w, device="cuda", generator=generator) * 4).to(dtype)
        cases = [("NCHW", base[..., :w].contiguous()),
                 ("channels-last", base[..., :w].contiguous(memory_format=torch.channels_last)),
                 ("3-D", base[..., :w].reshape(n, c, h * w)),
                 ("gapped", base[..., ::2])]
        scale = torch.rand(c, device="cuda", generator=generator) + 0.5
        shift = torch.randn(c, device="cuda", generator=generator)
        for layout, x in cases:
            for activation, lo, hi in ACTIVATIONS:
                for form, s, t in (("scale+shift", scale, shift), ("bias", None, shift), ("none", None, None)):
                    what = f"scale_shift_activation_mean {form} {activation} {NAMES[dtype]} {shape} {layout}"
                    y, mean = ha.scale_shift_activation_mean(x, s, t, activation, lo, hi)
                    checks.record(mismatch_report(y, ha.scale_shift_activation(x, s, t, activation, lo, hi), x),
                                  what + ": y is scale_shift_activation's")
                    checks.record(mean_report(mean, y), what + ": mean")
                    fake_y, fake_mean = ops.scale_shift_activation_mean(
                        meta_like(x), None if s is None else s.to("meta"), None if t is None else t.to("meta"),
                        activation, lo, hi)
                    checks.record("" if y.stride() == fake_y.stride() == torch.empty_like(x).stride()
                                  and mean.is_contiguous() and fake_mean.is_contiguous() else
                                  f"strides y {y.stride()} fake {fake_y.stride()}, mean {mean.stride()}",
                                  what + ": strides as the fake kernel's (y: empty_like(x), mean contiguous)")
    for shape in ((2, 3, 0, 4), (0, 3, 4, 4), (2, 0, 4, 4)):
        x = torch.empty(shape, device="cuda", dtype=dtype)
        y, mean = ha.scale_shift_activation_mean(x, None, None)
        expected = x.to(compute_dtype(dtype)).mean((2, 3)).to(dtype)
        same = mean.shape == expected.shape and bool((mean.isnan() == expected.isnan()).all())
        checks.record("" if same and y.shape == x.shape else f"y {tuple(y.shape)}, mean {mean}",
                      f"scale_shift_activation_mean of empty {shape} {NAMES[dtype]}: torch.mean's (NaN, empty)")


@pytest.mark.cuda
def test_refusals(checks) -> None:
    x = torch.randn(2, 4, 3, 3, device="cuda")
    p = torch.randn(4, device="cuda")
    for what, call, error in (
            ("CPU x", lambda: ha.scale_shift_residual_activation(x.cpu(), p, p, x), ValueError),
            ("CPU residual", lambda: ha.scale_shift_residual_activation(x, p, p, x.cpu()), ValueError),
            ("residual of another shape", lambda: ha.scale_shift_residual_activation(x, p, p, x[:1]), ValueError),
            ("residual of another dtype", lambda: ha.scale_shift_residual_activation(x, p, p, x.double()), TypeError),
            ("a shift without a scale", lambda: ha.scale_shift_residual_activation(x, None, p, x), ValueError),
            ("a short scale", lambda: ha.scale_shift_residual_activation(x, p[:3], p, x), ValueError),
            ("mean: CPU x", lambda: ha.scale_shift_activation_mean(x.cpu(), p, p), ValueError),
            ("mean: CPU shift", lambda: ha.scale_shift_activation_mean(x, None, p.cpu()), ValueError),
            ("mean: 2-D x", lambda: ha.scale_shift_activation_mean(x[:, :, 0, 0], p, p), ValueError),
            ("mean: a scale without a shift", lambda: ha.scale_shift_activation_mean(x, p, None), ValueError),
            ("mean: unknown activation", lambda: ha.scale_shift_activation_mean(x, p, p, "swish"), ValueError),
            ("mean: int x", lambda: ha.scale_shift_activation_mean(x.int(), p, p), TypeError)):
        checks.record(raises(error, call), f"{what} refused")
    import torch.autograd.forward_ad as fwAD
    for what, call in (("residual", lambda d: ha.scale_shift_residual_activation(d, p, p, x)),
                       ("mean", lambda d: ha.scale_shift_activation_mean(d, p, p))):
        def dual(call=call):
            with fwAD.dual_level():
                return call(fwAD.make_dual(x, torch.ones_like(x)))
        checks.record(raises(RuntimeError, dual), f"{what}: forward-mode AD refused")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=NAMES.get)
def test_opcheck(checks, generator, dtype) -> None:
    def leaf(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=generator) * scale).to(dtype).requires_grad_()

    x, r = leaf(3, 5, 4, 4), leaf(3, 5, 4, 4)
    s = (torch.rand(5, device="cuda", generator=generator) + 0.5).requires_grad_()
    t = torch.randn(5, device="cuda", generator=generator).requires_grad_()
    xl = x.detach().contiguous(memory_format=torch.channels_last).requires_grad_()
    cases = [("residual", ops.scale_shift_residual_activation.default, (x, s, t, r, "hardswish")),
             ("residual channels-last", ops.scale_shift_residual_activation.default, (xl, s, t, r, "identity")),
             ("residual without parameters", ops.scale_shift_residual_activation.default, (x, None, None, r, "relu6")),
             ("mean", ops.scale_shift_activation_mean.default, (x, s, t, "hardswish")),
             ("mean channels-last", ops.scale_shift_activation_mean.default, (xl, s, t, "relu")),
             ("mean bias", ops.scale_shift_activation_mean.default, (x, None, t, "hardsigmoid")),
             ("mean 3-D", ops.scale_shift_activation_mean.default, (leaf(3, 5, 7), s, t, "hardtanh", -0.5, 0.5))]
    for what, overload, args in cases:
        try:
            torch.library.opcheck(overload, args)
            report = ""
        except Exception as error:  # noqa: BLE001
            report = f"{type(error).__name__}: {str(error)[:600]}"
        checks.record(report, f"opcheck {what} {NAMES[dtype]}")


@pytest.mark.cuda
def test_gradcheck(checks, generator) -> None:
    """float64 gradients against torch.autograd.gradcheck: the residual op in every input; the mean
    op through both outputs, y alone and the mean alone."""
    def away_from_kinks(*shape):
        x = torch.rand(*shape, device="cuda", dtype=torch.float64, generator=generator) * 0.8 + 0.1
        return x + torch.randint(-5, 7, shape, device="cuda", generator=generator).double()

    x = away_from_kinks(2, 3, 4, 5).requires_grad_()
    s = (torch.rand(3, device="cuda", dtype=torch.float64, generator=generator) * 0.01 + 1.0).requires_grad_()
    t = (torch.rand(3, device="cuda", dtype=torch.float64, generator=generator) * 0.01).requires_grad_()
    r = (torch.rand(2, 3, 4, 5, device="cuda", dtype=torch.float64, generator=generator) * 0.01).requires_grad_()
    for activation, lo, hi in ACTIVATIONS:
        cases = [("scale_shift_residual_activation",
                  lambda x, s, t, r: ha.scale_shift_residual_activation(x, s, t, r, activation, lo, hi), (x, s, t, r)),
                 ("scale_shift_activation_mean, both outputs",
                  lambda x, s, t: ha.scale_shift_activation_mean(x, s, t, activation, lo, hi), (x, s, t)),
                 ("scale_shift_activation_mean, y",
                  lambda x, s, t: ha.scale_shift_activation_mean(x, s, t, activation, lo, hi)[0], (x, s, t)),
                 ("scale_shift_activation_mean, mean",
                  lambda x, s, t: ha.scale_shift_activation_mean(x, s, t, activation, lo, hi)[1], (x, s, t)),
                 ("scale_shift_activation_mean channels-last, mean",
                  lambda x, t: ha.scale_shift_activation_mean(x.contiguous(memory_format=torch.channels_last),
                                                              None, t, activation, lo, hi)[1], (x, t))]
        for what, fn, args in cases:
            try:
                report = "" if torch.autograd.gradcheck(fn, args, eps=1e-6, atol=1e-5) else "gradcheck false"
            except Exception as error:  # noqa: BLE001
                report = f"{type(error).__name__}: {str(error)[:400]}"
            checks.record(report, f"gradcheck {what} {activation}")


@pytest.mark.cuda
@pytest.mark.parametrize("layout", ("NCHW", "channels-last"))
def test_gradients_match_eager(checks, generator, layout) -> None:
    """float32 gradients against eager's autograd of the same expressions: the residual op's dx and
    dresidual bit for bit, the parameters' allclose (summation order); the mean op's allclose, with
    y's gradient, the mean's or both."""
    memory_format = torch.channels_last if layout == "channels-last" else torch.contiguous_format
    x32 = torch.randn(4, 8, 7, 7, device="cuda", generator=generator).contiguous(memory_format=memory_format) * 3
    r32 = torch.randn(4, 8, 7, 7, device="cuda", generator=generator)
    s32 = torch.rand(8, device="cuda", generator=generator) + 0.5
    t32 = torch.randn(8, device="cuda", generator=generator)
    grad = torch.randn(4, 8, 7, 7, device="cuda", generator=generator)
    grad_mean = torch.randn(4, 8, device="cuda", generator=generator)

    def close(name, a, b, what):
        ok = torch.allclose(a, b, rtol=1e-5, atol=1e-5)
        checks.record("" if ok else f"max diff {(a - b).abs().max().item():.3g}", f"{what} {name} {layout}")

    for activation, lo, hi in ACTIVATIONS:
        leaves = [v.clone().requires_grad_() for v in (x32, s32, t32, r32)]
        ours = torch.autograd.grad(ha.scale_shift_residual_activation(*leaves, activation, lo, hi), leaves, grad)
        leaves = [v.clone().requires_grad_() for v in (x32, s32, t32, r32)]
        z = leaves[0] * channel_view(leaves[1], x32) + channel_view(leaves[2], x32) + leaves[3]
        theirs = torch.autograd.grad(reference_activation(z, activation, lo, hi), leaves, grad)
        what = f"scale_shift_residual_activation {activation} float32 vs eager autograd"
        checks.record(mismatch_report(ours[0], theirs[0], x32), f"{what} dx {layout}")
        checks.record(mismatch_report(ours[3], theirs[3], x32), f"{what} dresidual {layout}")
        close("dscale", ours[1], theirs[1], what)
        close("dshift", ours[2], theirs[2], what)
        for used in ("y", "mean", "both"):
            grads = {"y": [grad], "mean": [grad_mean], "both": [grad, grad_mean]}[used]
            leaves = [v.clone().requires_grad_() for v in (x32, s32, t32)]
            y, mean = ha.scale_shift_activation_mean(*leaves, activation, lo, hi)
            outputs = {"y": [y], "mean": [mean], "both": [y, mean]}[used]
            ours = torch.autograd.grad(outputs, leaves, grads)
            leaves = [v.clone().requires_grad_() for v in (x32, s32, t32)]
            y = reference_activation(leaves[0] * channel_view(leaves[1], x32) + channel_view(leaves[2], x32),
                                     activation, lo, hi)
            outputs = {"y": [y], "mean": [y.mean((2, 3))], "both": [y, y.mean((2, 3))]}[used]
            theirs = torch.autograd.grad(outputs, leaves, grads)
            what = f"scale_shift_activation_mean {activation} float32, gradient of {used}, vs eager autograd"
            for name, a, b in zip(("dx", "dscale", "dshift"), ours, theirs):
                close(name, a, b, what)


@pytest.mark.cuda
def test_cuda_graph(checks, generator) -> None:
    """Both ops captured in a CUDA graph and replayed on new data, with a mean large enough to need
    partial sums in temporary memory (allocated from PyTorch's allocator while capturing)."""
    for layout, memory_format in (("NCHW", torch.contiguous_format), ("channels-last", torch.channels_last)):
        x = torch.randn(4, 32, 112, 112, device="cuda", generator=generator).contiguous(memory_format=memory_format)
        s = torch.rand(32, device="cuda", generator=generator) + 0.5
        t = torch.randn(32, device="cuda", generator=generator)

        def forward():
            y, mean = ha.scale_shift_activation_mean(x, s, t, "hardswish")
            return ha.scale_shift_residual_activation(y, s, t, x, "identity"), mean

        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            forward()
            with torch.cuda.graph(graph, stream=stream):
                out, mean = forward()
        torch.cuda.current_stream().wait_stream(stream)
        x.copy_(torch.randn(x.shape, device="cuda", generator=generator))
        graph.replay()
        torch.cuda.synchronize()
        expected_out, expected_mean = forward()
        checks.record(mismatch_report(out, expected_out, x), f"CUDA graph replay, {layout}: the residual op")
        checks.record(mismatch_report(mean, expected_mean), f"CUDA graph replay, {layout}: the mean")


def relative_difference(got: torch.Tensor, expected: torch.Tensor) -> float:
    """The largest difference relative to the largest expected value."""
    return (got.double() - expected.double()).abs().max().item() / expected.double().abs().max().item()


@pytest.mark.cuda
def test_linear_activation(checks, generator) -> None:
    """The float32 excitation's products (_C._linear_activation): relu?(x @ weight.T + bias) within
    1e-5 of float64 without TF32, at MobileNetV3's squeeze shapes, odd shapes and misaligned pointers,
    with and without the bias; with tf32 the products are TF32's (different from float32's, within
    1e-2), whatever PyTorch's own matmul setting."""
    cases = [(64, 576, 144), (64, 144, 576), (1, 16, 8), (3, 37, 5), (5, 7, 1)]
    matmul_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for n, k, m in cases:
            for misaligned in (False, True):
                offset = 1 if misaligned else 0
                x = torch.randn(n * k + offset, device="cuda", generator=generator)[offset:].view(n, k)
                weight = torch.randn(m * k + offset, device="cuda", generator=generator)[offset:].view(m, k)
                bias = torch.randn(m, device="cuda", generator=generator)
                for with_bias in (True, False):
                    b = bias if with_bias else None
                    exact = x.double() @ weight.double().t() + (bias.double() if with_bias else 0)
                    for relu in (False, True):
                        expected = exact.clamp_min(0) if relu else exact
                        what = (f"_linear_activation {n}x{k} @ {k}x{m}, bias {with_bias}, relu {relu}, "
                                f"misaligned {misaligned}")
                        for matmul_setting in (False, True):
                            torch.backends.cuda.matmul.allow_tf32 = matmul_setting
                            got = ha._C._linear_activation(x, weight, b, relu, False)
                            difference = relative_difference(got, expected)
                            checks.record("" if got.shape == (n, m) and difference <= 1e-5
                                          else f"shape {tuple(got.shape)}, relative difference {difference:.3g}",
                                          f"{what}, float32 (PyTorch's matmul TF32 {matmul_setting}): within 1e-5")
                        torch.backends.cuda.matmul.allow_tf32 = False
                        if (n, k, m) == (64, 576, 144) and not misaligned:
                            difference = relative_difference(ha._C._linear_activation(x, weight, b, relu, True),
                                                             expected)
                            checks.record("" if 1e-5 < difference <= 1e-2 else f"relative difference {difference:.3g}",
                                          f"{what}, TF32: TF32's rounding (between 1e-5 and 1e-2)")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
    # The plan a shape's first call made serves the next ones: each call's own bias, from any thread.
    x = torch.randn(8, 96, device="cuda", generator=generator)
    weight = torch.randn(24, 96, device="cuda", generator=generator)
    biases = [torch.randn(24, device="cuda", generator=generator) for _ in range(4)]
    exact = [(x.double() @ weight.double().t() + b.double()).clamp_min(0) for b in biases]
    for index in (0, 1, 0, 2):
        difference = relative_difference(ha._C._linear_activation(x, weight, biases[index], True, False), exact[index])
        checks.record("" if difference <= 1e-5 else f"relative difference {difference:.3g}",
                      f"_linear_activation: a repeated shape with bias {index}")
    failures = []

    def calls(index: int) -> None:
        for _ in range(50):
            got = ha._C._linear_activation(x, weight, biases[index], True, False)
            difference = relative_difference(got, exact[index])
            if difference > 1e-5:
                failures.append(f"thread {index}: relative difference {difference:.3g}")
                return

    threads = [threading.Thread(target=calls, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    checks.record("; ".join(failures), "_linear_activation: four threads, each with its own bias, 50 calls each")
    # More shapes than a thread keeps plans for (2048): the plans are dropped and made again, the
    # results the same.
    narrow_weight = weight[:, :16].contiguous()
    failures = []
    for n in list(range(1, 2100)) + [1, 2, 2099]:
        rows = torch.randn(n, 16, device="cuda", generator=generator)
        expected = (rows.double() @ narrow_weight.double().t() + biases[0].double()).clamp_min(0)
        got = ha._C._linear_activation(rows, narrow_weight, biases[0], True, False)
        difference = relative_difference(got, expected)
        if difference > 1e-5:
            failures.append(f"{n} rows: relative difference {difference:.3g}")
    checks.record("; ".join(failures), "_linear_activation: 2099 shapes in turn, then the first two and the last again")
    checks.record(raises(TypeError, lambda: ha._C._linear_activation(x.double(), weight.double(), None, False, False)),
                  "_linear_activation refuses float64")
    checks.record(raises(ValueError, lambda: ha._C._linear_activation(x, weight.t(), None, False, False)),
                  "_linear_activation refuses mismatched shapes")


@pytest.mark.cuda
def test_excitation_follows_cudnn_tf32(checks, generator) -> None:
    """A fused block's float32 excitation runs its products in TF32 exactly when cuDNN would have run
    the 1x1 convolutions they replace in TF32 (torch.backends.cudnn.allow_tf32), whatever PyTorch's
    matmul setting; with TF32 off it is the convolutions' expression within 1e-5."""
    c, cr = 576, 144
    norm = ha.BatchNormActivation(torch.ones(c, device="cuda"), torch.zeros(c, device="cuda"), "hardswish")
    block = ha.FusedInvertedResidual(
        None, (nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False).cuda(), norm),
        (nn.Conv2d(c, cr, 1).cuda(), nn.ReLU(), nn.Conv2d(cr, c, 1).cuda()),
        (nn.Conv2d(c, c, 1, bias=False).cuda(), norm), False)
    mean = torch.randn(64, c, device="cuda", generator=generator)
    r, e = block.se_reduce, block.se_expand
    hidden = (mean.double() @ r.weight.double().flatten(1).t() + r.bias.double()).clamp_min(0)
    exact = hidden @ e.weight.double().flatten(1).t() + e.bias.double()
    settings = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    try:
        for cudnn_tf32 in (False, True):
            for matmul_tf32 in (False, True):
                torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = cudnn_tf32, matmul_tf32
                with torch.no_grad():
                    difference = relative_difference(block.excitation(mean), exact)
                within = 1e-5 < difference <= 1e-2 if cudnn_tf32 else difference <= 1e-5
                checks.record("" if within else f"relative difference {difference:.3g}",
                              f"excitation, cuDNN TF32 {cudnn_tf32}, matmul TF32 {matmul_tf32}: "
                              f"{'TF32' if cudnn_tf32 else 'float32'} products")
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = settings


# (N, C, H, W, kernel_size, stride, pad_h, pad_w) of the one-kernel depthwise stage's tests: MobileNet's
# filters at odd sizes, one position, padding 0 and unequal, the widest channel count, blocks of
# several samples, and sizes whose means add the sums of several blocks.
DEPTHWISE_CASES = [(2, 16, 13, 11, 3, 1, 1, 1), (2, 16, 13, 11, 3, 2, 1, 1), (3, 24, 9, 10, 5, 1, 2, 2),
                   (3, 24, 9, 10, 5, 2, 2, 2), (1, 4, 1, 1, 3, 1, 1, 1), (2, 40, 6, 5, 3, 2, 0, 0),
                   (2, 8, 5, 7, 5, 1, 1, 3), (2, 1024, 7, 7, 5, 1, 2, 2), (70, 12, 4, 4, 3, 1, 1, 1),
                   (4, 16, 112, 112, 3, 1, 1, 1), (8, 72, 56, 56, 5, 2, 2, 2)]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=NAMES.get)
def test_gated_activation(checks, generator, dtype) -> None:
    """_C._gated_activation, ReXNet's gate multiply and activation in one pass: act(x * gate[n, c]) in
    the compute type, rounded once, for NCHW and channels-last x (batch 1 and 4), every activation;
    in float32 bit for bit eager's `act(x * gate.view(N, C, 1, 1))`. Refusals as the fused ops'."""
    call = ha._C._gated_activation
    ct = compute_dtype(dtype)
    for batch in (1, 4):
        base = salted_random(batch * 12 * 7 * 9, dtype, generator, device="cuda").view(batch, 12, 7, 9)
        gate = salted_random(batch * 12, dtype, generator, device="cuda").view(batch, 12)
        for layout, x in (("NCHW", base), ("channels-last", base.contiguous(memory_format=torch.channels_last))):
            for activation, lo, hi in ACTIVATIONS:
                got = call(x, gate, activation, lo, hi)
                what = f"_gated_activation {activation} {NAMES[dtype]} {layout} batch {batch}"
                expected = reference_activation(x.to(ct) * gate.to(ct).view(batch, 12, 1, 1), activation, lo, hi)
                checks.record(mismatch_report(got, expected.to(dtype), x), what)
                checks.record("" if got.stride() == torch.empty_like(x).stride() else f"strides {got.stride()}",
                              what + ": x's layout")
                if dtype == torch.float32:
                    eager = reference_activation(x * gate.view(batch, 12, 1, 1), activation, lo, hi)
                    checks.record(mismatch_report(got, eager, x), what + " vs eager ops")
    x = torch.randn(2, 4, 5, 5, device="cuda", generator=generator, dtype=dtype)
    gate = torch.rand(2, 4, device="cuda", generator=generator, dtype=dtype)
    checks.record(raises(ValueError, lambda: call(x.cpu(), gate.cpu(), "relu6", 0.0, 6.0)), "refuses a CPU x")
    checks.record(raises(ValueError, lambda: call(x, gate[:, :3], "relu6", 0.0, 6.0)), "refuses a gate of 2 x 3")
    other = torch.float64 if dtype != torch.float64 else torch.float32
    checks.record(raises(TypeError, lambda: call(x, gate.to(other), "relu6", 0.0, 6.0)), "refuses a gate of another dtype")
    checks.record(raises(ValueError, lambda: call(x.transpose(2, 3), gate, "relu6", 0.0, 6.0)),
                  "refuses an x neither NCHW nor channels-last")
    checks.record(raises(ValueError, lambda: call(x, gate, "gelu", 0.0, 6.0)), "refuses an unknown activation")
    checks.record(raises(ValueError, lambda: call(x, gate, "hardtanh", 1.0, -1.0)), "refuses min_val > max_val")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16), ids=NAMES.get)
def test_depthwise_stage(checks, generator, dtype) -> None:
    """_C._depthwise_conv_scale_shift_activation against the depthwise convolution, the scale and
    shift and the activation in float64 rounded once: float32 within 1e-5 of the largest output (the
    convolution's float sums), float16/bfloat16 within one unit; its mean against its y's mean
    (mean_report); y channels-last; the same bits on a second call; with the input concatenated
    (stride 1, same size), x's bits then y's and the same mean; refusals. A FusedInvertedResidual
    runs its depthwise stage in this kernel for channels-last CUDA input without gradients, and
    falls back to the convolution where a gradient is wanted, with the same results within rounding."""
    activations = [("identity", -1.0, 1.0), ("hardswish", -1.0, 1.0), ("relu", -1.0, 1.0),
                   ("hardtanh", -0.5, 2.0), ("hardsigmoid", -1.0, 1.0), ("relu6", -1.0, 1.0)]
    for index, (n, c, h, w, k, s, ph, pw) in enumerate(DEPTHWISE_CASES):
        x = torch.randn(n, c, h, w, device="cuda", generator=generator).to(dtype).contiguous(
            memory_format=torch.channels_last)
        weight = (torch.randn(c, 1, k, k, device="cuda", generator=generator) / k).to(dtype)
        scale = torch.rand(c, device="cuda", generator=generator) + 0.5
        shift = torch.randn(c, device="cuda", generator=generator) * 0.5
        taps = weight.float().reshape(c, k * k).t().contiguous()
        z = F.conv2d(x.double(), weight.double(), None, s, (ph, pw), 1, c)
        z = (z * scale.double().view(1, c, 1, 1) + shift.double().view(1, c, 1, 1))
        activation, lo, hi = activations[index % len(activations)]
        expected = reference_activation(z, activation, lo, hi)
        what = f"depthwise {NAMES[dtype]} {(n, c, h, w)} k{k} s{s} pad ({ph}, {pw}) {activation}"
        for with_mean in (False, True):
            y, mean = ha._C._depthwise_conv_scale_shift_activation(x, taps, scale, shift, k, s, ph, pw, activation,
                                                                   lo, hi, with_mean, False)
            largest = max(expected.abs().max().item(), 1e-30)
            if dtype == torch.float32:
                good = (y.double() - expected).abs().max().item() <= 1e-5 * largest
            else:
                good = torch.allclose(y.double(), expected.to(dtype).double(), rtol=torch.finfo(dtype).eps,
                                      atol=1e-5 * largest)
            checks.record("" if good and y.shape == expected.shape else
                          f"largest difference {(y.double() - expected).abs().max().item():.3g}", f"{what}: y")
            checks.record("" if y.is_contiguous(memory_format=torch.channels_last) else f"strides {y.stride()}",
                          f"{what}: y channels-last")
            again = ha._C._depthwise_conv_scale_shift_activation(x, taps, scale, shift, k, s, ph, pw, activation, lo,
                                                                 hi, with_mean, False)
            checks.record(mismatch_report(again[0], y, x), f"{what}: the same bits again")
            if with_mean:
                checks.record(mean_report(mean, y), f"{what}: its mean")
                checks.record(mismatch_report(again[1], mean, x), f"{what}: the same mean again")
            else:
                checks.record("" if mean is None else "a mean", f"{what}: no mean unless asked")
            if s == 1 and ph == pw == k // 2:  # the output x's size: the kernel can write cat([x, y], 1)
                joined, joined_mean = ha._C._depthwise_conv_scale_shift_activation(
                    x, taps, scale, shift, k, s, ph, pw, activation, lo, hi, with_mean, True)
                checks.record(mismatch_report(joined[:, :c], x, x) or mismatch_report(joined[:, c:], y, x),
                              f"{what}: concatenated, x's bits then y's")
                checks.record("" if joined.is_contiguous(memory_format=torch.channels_last)
                              else f"strides {joined.stride()}", f"{what}: concatenated, channels-last")
                checks.record(mismatch_report(joined_mean, mean, x) if with_mean else
                              ("" if joined_mean is None else "a mean"), f"{what}: concatenated, the same mean")
    x = torch.randn(2, 16, 8, 8, device="cuda", generator=generator)
    taps, ones, zeros = torch.randn(9, 16, device="cuda"), torch.ones(16, device="cuda"), torch.zeros(16, device="cuda")
    call = ha._C._depthwise_conv_scale_shift_activation
    checks.record(raises(ValueError, lambda: call(x, taps, ones, zeros, 3, 1, 1, 1, "relu", 0.0, 1.0, False, False)),
                  "depthwise: refuses NCHW x")
    xl = x.contiguous(memory_format=torch.channels_last)
    checks.record(raises(TypeError, lambda: call(xl.double(), taps, ones, zeros, 3, 1, 1, 1, "relu", 0.0, 1.0, False, False)),
                  "depthwise: refuses float64")
    narrow = xl[:, :14].contiguous(memory_format=torch.channels_last)
    checks.record(raises(ValueError, lambda: call(narrow, taps[:, :14].contiguous(), ones[:14], zeros[:14], 3, 1, 1, 1,
                                                  "relu", 0.0, 1.0, False, False)), "depthwise: refuses 14 channels")
    checks.record(raises(ValueError, lambda: call(xl, taps, ones, zeros, 7, 1, 1, 1, "relu", 0.0, 1.0, False, False)),
                  "depthwise: refuses a 7x7 filter")
    checks.record(raises(ValueError, lambda: call(xl, taps, ones[:8], zeros, 3, 1, 1, 1, "relu", 0.0, 1.0, False, False)),
                  "depthwise: refuses a short scale")
    checks.record(raises(ValueError, lambda: call(xl, taps, ones, zeros, 3, 1, 1, 1, "silu", 0.0, 1.0, False, False)),
                  "depthwise: refuses silu (its epilogue runs the hard activations only)")
    checks.record(raises(ValueError, lambda: call(xl, taps, ones, zeros, 3, 2, 1, 1, "relu", 0.0, 1.0, False, True)),
                  "depthwise: refuses to concatenate x at stride 2")
    checks.record(raises(ValueError, lambda: call(xl, taps, ones, zeros, 3, 1, 0, 0, "relu", 0.0, 1.0, False, True)),
                  "depthwise: refuses to concatenate x to a smaller output")
    # In a block: the kernel without gradients, the convolution with them, the same values.
    c = 72
    norm = ha.BatchNormActivation(torch.rand(c, device="cuda") + 0.5, torch.randn(c, device="cuda"), "hardswish")
    block = ha.FusedInvertedResidual(
        None, (nn.Conv2d(c, c, 5, stride=2, padding=2, groups=c, bias=False).cuda(), norm),
        (nn.Conv2d(c, 24, 1).cuda(), nn.ReLU(), nn.Conv2d(24, c, 1).cuda()),
        (nn.Conv2d(c, c, 1, bias=False).cuda(), norm), False).to(dtype)
    x = torch.randn(4, c, 28, 28, device="cuda", generator=generator).to(dtype).contiguous(
        memory_format=torch.channels_last)
    with torch.no_grad():
        checks.record("" if block.depthwise_stage(x, True) is not None else "not taken",
                      f"depthwise {NAMES[dtype]}: a block takes the one-kernel stage without gradients")
        fast = block(x)
        with torch.autocast("cuda", dtype=torch.float16):
            checks.record("" if block.depthwise_stage(x, True) is None else "taken",
                          f"depthwise {NAMES[dtype]}: not under autocast (the convolution runs in its dtype)")
        other = torch.float16 if dtype != torch.float16 else torch.bfloat16
        checks.record("" if block.depthwise_stage(x.to(other), True) is None else "taken",
                      f"depthwise {NAMES[dtype]}: not for an input of another dtype than the filter's")
    checks.record("" if block.depthwise_stage(x, True) is None else "taken",
                  f"depthwise {NAMES[dtype]}: and not where the convolution's weight wants a gradient")
    slow = block(x).detach()
    tolerance = 1e-4 if dtype == torch.float32 else 5e-2
    difference = relative_difference(fast, slow)
    checks.record("" if difference <= tolerance else f"relative difference {difference:.3g}",
                  f"depthwise {NAMES[dtype]}: a block's output with and without the one-kernel stage within "
                  f"{tolerance:g}")


@pytest.mark.cuda
@pytest.mark.parametrize("library, name", REAL_MODELS)
def test_real_models(checks, generator, library, name) -> None:
    """Real networks rewritten (fuse_blocks, then fuse_batchnorm_activation and
    fuse_squeeze_excitation) against the original, eager, float32 with TF32 off: within 1e-4 of the
    largest output in both layouts; the difference of the rewrite without fuse_blocks, and the
    bfloat16 differences, printed. A CUDA graph of the rewrite replays its eager results."""
    base = build(library, name).cuda()
    blocks = count_blocks(base)
    rewritten = copy.deepcopy(base)
    fused = ha.fuse_blocks(rewritten)
    folded = ha.fuse_batchnorm_activation(rewritten)
    gates = ha.fuse_squeeze_excitation(rewritten)
    checks.record("" if fused == blocks > 0 else f"fused {fused} of {blocks}", f"{name}: every block fused")
    previous = copy.deepcopy(base)
    ha.fuse_batchnorm_activation(previous)
    ha.fuse_squeeze_excitation(previous)
    x = torch.randn(8, 3, 224, 224, device="cuda", generator=generator)
    tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for layout, memory_format in (("channels-last", torch.channels_last), ("NCHW", torch.contiguous_format)):
            xl = x.contiguous(memory_format=memory_format)
            for dtype in (torch.float32, torch.bfloat16):
                with torch.no_grad():
                    expected = copy.deepcopy(base).to(dtype=dtype, memory_format=memory_format)(xl.to(dtype)).float()
                    model = copy.deepcopy(rewritten).to(dtype=dtype, memory_format=memory_format)
                    got = model(xl.to(dtype)).float()
                    before = copy.deepcopy(previous).to(dtype=dtype, memory_format=memory_format)(xl.to(dtype))
                largest = expected.abs().max().item()
                relative = (got - expected).abs().max().item() / largest
                relative_before = (before.float() - expected).abs().max().item() / largest
                print(f"  {name} {NAMES[dtype]} {layout}: {fused} blocks, {folded} BatchNorms, {gates} "
                      f"squeeze-excitations fused; largest output difference to eager, relative to the largest "
                      f"output: {relative:.3g} (the rewrite without fuse_blocks: {relative_before:.3g})")
                if dtype == torch.float32:
                    checks.record("" if relative <= 1e-4 else f"relative difference {relative:.3g}",
                                  f"{name} rewritten, float32 {layout}: within 1e-4 of eager")
                if dtype == torch.bfloat16 and layout == "channels-last":
                    forward = ha.cuda_graph_inference(model, xl.to(dtype))
                    checks.record(mismatch_report(forward(xl.to(dtype)).float(), got, xl),
                                  f"{name} rewritten, bfloat16 {layout}: a CUDA graph replays the eager results")
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32


@pytest.mark.cuda
@pytest.mark.parametrize("library, name", [("timm", "mobilenetv3_small_100"), ("torchvision", "mobilenet_v3_small")])
def test_fused_blocks_differentiate(checks, generator, library, name) -> None:
    """A rewritten network differentiates: the input's gradient (eval mode: BatchNorms frozen in both)
    and the convolutions' (shared by the fused blocks) allclose to the original's, float32, TF32 off."""
    base = build(library, name).cuda()
    rewritten = copy.deepcopy(base)
    ha.optimize_for_inference(rewritten)
    x = torch.randn(4, 3, 160, 160, device="cuda", generator=generator)
    tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        grads = []
        for model in (base, rewritten):
            leaf = x.clone().requires_grad_()
            out = model(leaf)
            weights = [m.weight for m in model.modules() if type(m) is nn.Conv2d]
            grads.append(torch.autograd.grad((out * torch.linspace(-1, 1, out.numel(), device="cuda").view_as(out))
                                             .sum(), [leaf] + weights))
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32
    ours, theirs = grads[1], grads[0]
    checks.record("" if len(ours) == len(theirs) else f"{len(ours)} against {len(theirs)} gradients",
                  f"{name}: the rewrite keeps every convolution")
    differing = [i for i, (a, b) in enumerate(zip(ours, theirs))
                 if not torch.allclose(a, b, rtol=1e-3, atol=1e-3 * b.abs().max().item())]
    checks.record("" if not differing else f"gradients {differing[:10]} differ",
                  f"{name} rewritten: input and convolution gradients allclose to the original's")
