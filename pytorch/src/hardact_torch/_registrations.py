"""Python-side registrations for the hardact operators defined in csrc/ops/ops.cu and csrc/ops/fused_ops.cu
(their autograd is C++, csrc/ops/autograd.cpp and csrc/ops/fused_autograd.cpp):

- fake (meta) kernels, so torch.compile, torch.export and FakeTensorMode can trace the ops;
- DTensor sharding rules: every op is pointwise, so a sharded input stays sharded (no collective);
  the scale-and-shift ops keep their per-channel parameters replicated (x sharded on any dim but 1),
  and scale_shift_activation_mean, whose mean reduces every dim after 1, shards x on the batch only.

The fake kernels repeat the argument checks of the CUDA kernels that depend only on metadata, so a
compiled graph fails while tracing instead of at run time.
"""

from __future__ import annotations

import math

import torch

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
UNARY_OPS = ("hardsigmoid", "hardtanh", "hardswish", "relu6")
FUSED_OPS = ("scale_shift_activation", "residual_activation", "scale_shift_residual_activation",
             "scale_shift_activation_mean", "hardsigmoid_gate", "bias_activation_product")
FUSED_ACTIVATIONS = ("identity", "hardsigmoid", "hardswish", "relu6", "hardtanh", "relu", "silu")

_ops = torch.ops.hardact


def _check_dtype(op_name: str, x: torch.Tensor) -> None:
    torch._check_type(
        x.dtype in SUPPORTED_DTYPES,
        lambda: f"hardact::{op_name}: unsupported dtype {x.dtype}; expected float32, float64, float16 or bfloat16",
    )


def _check_bounds(op_name: str, min_val: float, max_val: float) -> None:
    torch._check_value(not (math.isnan(min_val) or math.isnan(max_val)),
                       lambda: f"hardact::{op_name}: min_val and max_val must not be NaN")
    torch._check_value(min_val <= max_val, lambda: f"hardact::{op_name}: min_val cannot be greater than max_val")


def _check_like_x(op_name: str, x: torch.Tensor, other: torch.Tensor, other_name: str) -> None:
    torch._check_value(other.device == x.device,
                       lambda: f"hardact::{op_name}: {other_name} is on {other.device}, x on {x.device}")
    torch._check_type(other.dtype == x.dtype,
                      lambda: f"hardact::{op_name}: {other_name} has dtype {other.dtype}, x has {x.dtype}")
    torch._check_value(other.shape == x.shape,
                       lambda: f"hardact::{op_name}: {other_name} has shape {tuple(other.shape)}, x has {tuple(x.shape)}")


# ---- fake kernels ----------------------------------------------------------------------------------
# The CUDA kernels return at::empty_like(x): same sizes, dtype and device, and x's strides when x is
# non-overlapping and dense. torch.empty_like follows the same rule. The in-place and out= forms
# return nothing (see the schemas in csrc/ops/ops.cu).

def _register_fakes() -> None:
    for name in ("hardsigmoid", "hardswish", "relu6"):
        def functional(x, name=name):
            _check_dtype(name, x)
            return torch.empty_like(x)

        def inplace(x, name=name):
            _check_dtype(name + "_", x)

        def out_variant(x, *, out, name=name):
            _check_dtype(name + ".out", x)
            _check_like_x(name + ".out", x, out, "out")

        def backward(grad_output, x, name=name):
            _check_dtype(name + "_backward", x)
            _check_like_x(name + "_backward", x, grad_output, "grad_output")
            return torch.empty_like(x)

        torch.library.register_fake(f"hardact::{name}", functional)
        torch.library.register_fake(f"hardact::{name}_", inplace)
        torch.library.register_fake(f"hardact::{name}.out", out_variant)
        torch.library.register_fake(f"hardact::{name}_backward", backward)

    @torch.library.register_fake("hardact::hardtanh")
    def _(x, min_val=-1.0, max_val=1.0):
        _check_bounds("hardtanh", min_val, max_val)
        _check_dtype("hardtanh", x)
        return torch.empty_like(x)

    @torch.library.register_fake("hardact::hardtanh_")
    def _(x, min_val=-1.0, max_val=1.0):
        _check_bounds("hardtanh_", min_val, max_val)
        _check_dtype("hardtanh_", x)

    @torch.library.register_fake("hardact::hardtanh.out")
    def _(x, min_val=-1.0, max_val=1.0, *, out):
        _check_bounds("hardtanh.out", min_val, max_val)
        _check_dtype("hardtanh.out", x)
        _check_like_x("hardtanh.out", x, out, "out")

    @torch.library.register_fake("hardact::hardtanh_backward")
    def _(grad_output, x, min_val, max_val):
        _check_bounds("hardtanh_backward", min_val, max_val)
        _check_dtype("hardtanh_backward", x)
        _check_like_x("hardtanh_backward", x, grad_output, "grad_output")
        return torch.empty_like(x)


def _check_activation(op_name: str, activation: str, min_val: float, max_val: float) -> None:
    torch._check_value(activation in FUSED_ACTIVATIONS,
                       lambda: f"hardact::{op_name}: activation must be one of {', '.join(FUSED_ACTIVATIONS)}; "
                               f"got '{activation}'")
    if activation == "hardtanh":
        _check_bounds(op_name, min_val, max_val)


def _check_channel_input(op_name: str, x: torch.Tensor) -> None:
    _check_dtype(op_name, x)
    torch._check_value(x.dim() >= 2,
                       lambda: f"hardact::{op_name}: x needs a channel dimension (dim 1); got shape {tuple(x.shape)}")


def _check_channel_lengths(op_name: str, x: torch.Tensor, **parameters) -> None:
    """Each given per-channel parameter holds one value per channel (dim 1) of x."""
    for what, p in parameters.items():
        if p is not None:
            torch._check_value(p.numel() == x.shape[1],
                               lambda: f"hardact::{op_name}: {what} has {p.numel()} elements, expected {x.shape[1]}")


def _check_channel_parameters(op_name: str, x: torch.Tensor, scale, shift) -> None:
    torch._check_value(scale is None or shift is not None,
                       lambda: f"hardact::{op_name}: a scale needs a shift (pass zeros for x * scale alone)")
    _check_channel_lengths(op_name, x, scale=scale, shift=shift)


def _register_fused_fakes() -> None:
    @torch.library.register_fake("hardact::scale_shift_activation")
    def _(x, scale=None, shift=None, activation="identity", min_val=-1.0, max_val=1.0):
        name = "scale_shift_activation"
        _check_channel_input(name, x)
        _check_activation(name, activation, min_val, max_val)
        _check_channel_parameters(name, x, scale, shift)
        return torch.empty_like(x)

    @torch.library.register_fake("hardact::scale_shift_residual_activation")
    def _(x, scale, shift, residual, activation="identity", min_val=-1.0, max_val=1.0):
        name = "scale_shift_residual_activation"
        _check_channel_input(name, x)
        _check_like_x(name, x, residual, "residual")
        _check_activation(name, activation, min_val, max_val)
        torch._check_value((scale is None) == (shift is None),
                           lambda: f"hardact::{name}: scale and shift come together or not at all (for x + shift + "
                                   "residual pass a scale of ones)")
        _check_channel_parameters(name, x, scale, shift)
        return torch.empty_like(x)

    @torch.library.register_fake("hardact::scale_shift_activation_mean")
    def _(x, scale=None, shift=None, activation="identity", min_val=-1.0, max_val=1.0):
        name = "scale_shift_activation_mean"
        _check_channel_input(name, x)
        torch._check_value(x.dim() >= 3, lambda: f"hardact::{name}: x needs dimensions after the channel one to "
                                                 f"average over; got shape {tuple(x.shape)}")
        _check_activation(name, activation, min_val, max_val)
        _check_channel_parameters(name, x, scale, shift)
        return torch.empty_like(x), x.new_empty((x.shape[0], x.shape[1]))

    @torch.library.register_fake("hardact::residual_activation")
    def _(x, residual, activation="identity", min_val=-1.0, max_val=1.0):
        _check_dtype("residual_activation", x)
        _check_like_x("residual_activation", x, residual, "residual")
        _check_activation("residual_activation", activation, min_val, max_val)
        return torch.empty_like(x)

    @torch.library.register_fake("hardact::bias_activation_product")
    def _(x, bias, other, other_bias, activation="identity", min_val=-1.0, max_val=1.0):
        name = "bias_activation_product"
        _check_channel_input(name, x)
        _check_like_x(name, x, other, "other")
        _check_activation(name, activation, min_val, max_val)
        _check_channel_lengths(name, x, bias=bias, other_bias=other_bias)
        return torch.empty_like(x)

    @torch.library.register_fake("hardact::hardsigmoid_gate")
    def _(x, gate):
        _check_channel_input("hardsigmoid_gate", x)
        torch._check_type(gate.dtype == x.dtype,
                          lambda: f"hardact::hardsigmoid_gate: gate has dtype {gate.dtype}, x has {x.dtype}")
        torch._check_value(gate.dim() >= 2 and gate.shape[0] == x.shape[0] and gate.shape[1] == x.shape[1]
                           and gate.numel() == x.shape[0] * x.shape[1],
                           lambda: "hardact::hardsigmoid_gate: gate must hold one value per (n, c) of x")
        return torch.empty_like(x)


# ---- DTensor -------------------------------------------------------------------------------------

def sharded_ops() -> list:
    """The op overloads with a DTensor sharding rule: functional, in-place and backward forms.
    (The out= forms have none: DTensor's dispatcher expects an out= op to return its out tensor, and
    these return nothing, as AOTAutograd requires of custom mutating ops.)"""
    overloads = []
    for name in UNARY_OPS:
        overloads += [getattr(_ops, name).default, getattr(_ops, name + "_").default,
                      getattr(_ops, name + "_backward").default]
    return overloads + [_ops.scale_shift_activation.default, _ops.residual_activation.default,
                        _ops.scale_shift_residual_activation.default, _ops.scale_shift_activation_mean.default,
                        _ops.bias_activation_product.default]


def _register_sharding() -> bool:
    """Elementwise rule: output placement = input placement, for Shard(d) on any dimension and for
    Replicate. Partial is not offered (the ops are not linear), so DTensor reduces a Partial input
    first, as it must. Returns False where torch.distributed (or DTensor) is not available."""
    if not torch.distributed.is_available():
        return False
    try:
        from torch.distributed.tensor import Replicate, Shard
        from torch.distributed.tensor.experimental import register_sharding
    except ImportError:
        return False

    def rule(tensor_count: int, returns_tensor: bool):
        # The tensors come first in every schema, all of x's shape; the floats get None.
        def acceptable(*args, **kwargs):
            spec = args[tensor_count - 1]
            others = [None] * (len(args) + len(kwargs) - tensor_count)
            choices = []
            for placement in [Replicate()] + [Shard(dim) for dim in range(spec.ndim)]:
                output = [placement] if returns_tensor else []
                choices.append((output, [placement] * tensor_count + others))
            return choices
        return acceptable

    for name in UNARY_OPS:
        register_sharding(getattr(_ops, name).default)(rule(1, True))
        register_sharding(getattr(_ops, name + "_").default)(rule(1, False))
        register_sharding(getattr(_ops, name + "_backward").default)(rule(2, True))
    register_sharding(_ops.residual_activation.default)(rule(2, True))

    # Per-channel parameters are whole on every rank: x may be sharded on any dimension but the
    # channel one (dim 1), and the parameters replicated; the output is sharded as x.
    @register_sharding(_ops.scale_shift_activation.default)
    def _(x, scale=None, shift=None, *rest, **kwargs):
        others = [None] * (len(rest) + len(kwargs))
        params = [None if p is None else Replicate() for p in (scale, shift)]
        return [([placement], [placement] + params + others)
                for placement in [Replicate()] + [Shard(dim) for dim in range(x.ndim) if dim != 1]]

    # The residual is sharded as x.
    @register_sharding(_ops.scale_shift_residual_activation.default)
    def _(x, scale, shift, residual, *rest, **kwargs):
        others = [None] * (len(rest) + len(kwargs))
        params = [None if p is None else Replicate() for p in (scale, shift)]
        return [([placement], [placement] + params + [placement] + others)
                for placement in [Replicate()] + [Shard(dim) for dim in range(x.ndim) if dim != 1]]

    # other is sharded as x, both biases replicated.
    @register_sharding(_ops.bias_activation_product.default)
    def _(x, bias, other, other_bias, *rest, **kwargs):
        others = [None] * (len(rest) + len(kwargs))
        return [([placement], [placement, Replicate(), placement, Replicate()] + others)
                for placement in [Replicate()] + [Shard(dim) for dim in range(x.ndim) if dim != 1]]

    # The mean reduces every dim after 1 and keeps dims 0 and 1, of which only the batch may be
    # sharded (the parameters are whole per channel): x sharded on dim 0 gives y and mean sharded on
    # dim 0. A shard of the averaged dims would make each rank's mean a partial one, so DTensor
    # gathers x first there.
    @register_sharding(_ops.scale_shift_activation_mean.default)
    def _(x, scale=None, shift=None, *rest, **kwargs):
        others = [None] * (len(rest) + len(kwargs))
        params = [None if p is None else Replicate() for p in (scale, shift)]
        return [([placement, placement], [placement] + params + others) for placement in (Replicate(), Shard(0))]
    return True


_register_fakes()
_register_fused_fakes()
DTENSOR_SHARDING_REGISTERED = _register_sharding()
