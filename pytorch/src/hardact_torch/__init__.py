"""hardact for PyTorch: HardSigmoid, HardTanh, HardSwish and ReLU6 as PyTorch operators.

    import hardact_torch as ha
    model = nn.Sequential(nn.Linear(4096, 4096), ha.HardSigmoid())  # like nn.Hardsigmoid()
    y = ha.hardtanh(x, -2.0, 2.0)                                    # like F.hardtanh(x, -2.0, 2.0)

Importing this package registers the operators torch.ops.hardact.{hardsigmoid, hardtanh, hardswish,
relu6} with their in-place (`hardsigmoid_`) and out= (`hardsigmoid.out`) forms, which return nothing,
and backward (`hardsigmoid_backward`) forms; their autograd (C++), fake kernels (torch.compile,
torch.export) and DTensor sharding rules. The functions and modules below mirror
torch.nn.functional and torch.nn; `replace_activations(model)` swaps a model's torch.nn
activation modules for them.

Results on CUDA are bit-identical to PyTorch's for float32, float16 and bfloat16, forward and
backward, and for float64 except HardSigmoid/HardSwish, which hardact computes exactly in double
(PyTorch multiplies by float(1/6) widened to double: hardsigmoid saturates at 1.0000000298).
Tensors of any layout are accepted (dense ones, including transposed and offset views, are used
in place; others through one copy). Only CUDA tensors: a CPU tensor raises ValueError. The
functional and in-place forms are differentiable as PyTorch's are; the out= forms are not. Under
torch.compile the functions and modules are torch.nn.functional's, so Inductor fuses them.
"""

from __future__ import annotations

import torch
from torch import nn

import torch.nn.functional as F
from torch.compiler import is_compiling as _is_compiling

from . import _C  # loading the extension registers torch.ops.hardact
from .cuda_graph import CudaGraphInference, cuda_graph_inference
from ._registrations import (DTENSOR_SHARDING_REGISTERED, FUSED_ACTIVATIONS, SUPPORTED_DTYPES, UNARY_OPS,
                             sharded_ops)
from .functional import (bias_activation, hardsigmoid, hardsigmoid_, hardsigmoid_gate, hardswish, hardswish_,
                         hardtanh, hardtanh_, relu6, relu6_, residual_activation, scale_shift_activation,
                         scale_shift_activation_mean, scale_shift_residual_activation)
from .modules import (BatchNormActivation, HardSigmoid, HardSigmoidSqueezeExcitation, HardSwish, HardTanh,
                      ReLU6)

__all__ = [
    "SUPPORTED_DTYPES", "UNARY_OPS", "DTENSOR_SHARDING_REGISTERED", "sharded_ops",
    "hardsigmoid", "hardsigmoid_", "hardtanh", "hardtanh_", "hardswish", "hardswish_", "relu6", "relu6_",
    "HardSigmoid", "HardTanh", "HardSwish", "ReLU6", "ModelNew", "replace_activations",
    "FUSED_ACTIVATIONS", "scale_shift_activation", "bias_activation", "residual_activation", "hardsigmoid_gate",
    "scale_shift_residual_activation", "scale_shift_activation_mean",
    "BatchNormActivation", "fuse_batchnorm_activation", "HardSigmoidSqueezeExcitation", "fuse_squeeze_excitation",
    "FusedInvertedResidual", "fuse_blocks", "optimize_for_inference",
    "CudaGraphInference", "cuda_graph_inference",
]

ops = torch.ops.hardact


class ModelNew(nn.Module):
    """Drop-in for a KernelBench-style `Model` whose forward is F.hardsigmoid(x) (the default) or
    F.hardtanh(x, min_val, max_val): ModelNew(), ModelNew("hardtanh"), ModelNew("hardtanh", 0.0, 6.0)."""

    KINDS = ("hardsigmoid", "hardtanh")

    def __init__(self, kind: str = "hardsigmoid", min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if kind not in self.KINDS:
            raise ValueError(f"hardact.ModelNew: kind must be one of {self.KINDS}, got {kind!r}")
        self.activation = HardSigmoid(inplace) if kind == "hardsigmoid" else HardTanh(min_val, max_val, inplace)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(x)


def _replacement(module: nn.Module) -> nn.Module | None:
    """hardact's module for a torch.nn activation module (the same arguments), or None."""
    kind = type(module)
    if kind is nn.Hardswish:
        return HardSwish(module.inplace)
    if kind is nn.Hardsigmoid:
        return HardSigmoid(module.inplace)
    if kind is nn.ReLU6:
        return ReLU6(module.inplace)
    if kind is nn.Hardtanh:
        return HardTanh(module.min_val, module.max_val, module.inplace)
    return None


def replace_activations(model: nn.Module) -> int:
    """Replaces, in place, every nn.Hardswish, nn.Hardsigmoid, nn.ReLU6 and nn.Hardtanh module of
    `model` (exactly those classes, not subclasses) by hardact's, keeping `inplace` and the bounds.
    Returns how many were replaced."""
    replaced = 0
    for parent in model.modules():
        for name, child in list(parent.named_children()):
            new = _replacement(child)
            if new is not None:
                setattr(parent, name, new)
                replaced += 1
    return replaced


def _fused_activation(module: nn.Module) -> tuple[str, float, float] | None:
    """(name, min_val, max_val) of an activation module the fused op computes, or None."""
    kind = type(module)
    if kind in (nn.Hardswish, HardSwish):
        return "hardswish", -1.0, 1.0
    if kind in (nn.Hardsigmoid, HardSigmoid):
        return "hardsigmoid", -1.0, 1.0
    if kind in (nn.ReLU6, ReLU6):
        return "relu6", 0.0, 6.0
    if kind in (nn.Hardtanh, HardTanh):
        return "hardtanh", float(module.min_val), float(module.max_val)
    if kind is nn.ReLU:
        return "relu", 0.0, float("inf")
    if kind is nn.Identity:
        return "identity", -1.0, 1.0
    return None


def _is_timm_batchnorm_act(module: nn.Module) -> bool:
    """timm's BatchNormAct2d: a BatchNorm2d with .act (and .drop, identity in eval) applied after it."""
    return (isinstance(module, nn.BatchNorm2d) and type(module).__name__ == "BatchNormAct2d"
            and hasattr(module, "act") and hasattr(module, "drop"))


def _foldable(bn: nn.Module) -> bool:
    return (type(bn) in (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d) or _is_timm_batchnorm_act(bn)) \
        and bn.running_mean is not None and bn.running_var is not None


def fuse_batchnorm_activation(model: nn.Module) -> int:
    """Rewrites an eval-mode model in place: every BatchNorm becomes one BatchNormActivation, with
    the activation hardact fuses (hardswish, hardsigmoid, relu6, hardtanh, relu) that follows it as
      - the next module of an nn.Sequential (torchvision's Conv2dNormActivation is one): the
        BatchNorm is replaced, the activation removed;
      - timm's BatchNormAct2d (its activation, or none, is part of the module);
    and with none (identity) where no such activation follows: one pass at the copy rate in place of
    PyTorch's BatchNorm kernel. A BatchNorm whose statistics are not tracked is left alone. Returns
    how many BatchNorms were rewritten. Raises RuntimeError for a model in training mode: its
    BatchNorms use batch statistics."""
    if model.training:
        raise RuntimeError("hardact.fuse_batchnorm_activation: the model is in training mode; call model.eval() "
                           "first (a training BatchNorm normalises with batch statistics, which cannot be folded)")
    fused = 0
    for parent in list(model.modules()):
        if isinstance(parent, nn.Sequential):
            names = list(parent._modules.keys())
            drop = []
            for first, second in zip(names, names[1:]):
                bn, act = parent._modules[first], parent._modules[second]
                if first in drop or type(bn) not in (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d) \
                        or not _foldable(bn):
                    continue
                spec = _fused_activation(act)
                if spec is None or spec[0] == "identity":
                    continue
                parent._modules[first] = BatchNormActivation.from_batchnorm(bn, *spec).to(bn.running_mean.device)
                drop.append(second)
                fused += 1
            for name in drop:
                del parent._modules[name]
        for name, child in list(parent.named_children()):
            if not _foldable(child):
                continue
            # After the pairs above, a plain BatchNorm left here has no fusable activation after it.
            spec = _fused_activation(child.act) if _is_timm_batchnorm_act(child) else ("identity", -1.0, 1.0)
            if spec is not None:
                setattr(parent, name, BatchNormActivation.from_batchnorm(child, *spec).to(child.running_mean.device))
                fused += 1
    return fused


def _hard_sigmoid_squeeze_excitation(module: nn.Module) -> HardSigmoidSqueezeExcitation | None:
    """The fused module for torchvision's SqueezeExcitation or timm's SqueezeExcite gated by a hard
    sigmoid, or None. Recognised by class name, package and attributes, whose forward is known."""
    kind = type(module)
    package = kind.__module__.split(".")[0]
    if kind.__name__ == "SqueezeExcitation" and package == "torchvision" \
            and type(getattr(module, "scale_activation", None)) in (nn.Hardsigmoid, HardSigmoid) \
            and isinstance(getattr(module, "avgpool", None), nn.AdaptiveAvgPool2d) \
            and module.avgpool.output_size in (1, (1, 1)):
        return HardSigmoidSqueezeExcitation(module.avgpool, module.fc1, module.activation, module.fc2)
    if kind.__name__ == "SqueezeExcite" and package == "timm" \
            and type(getattr(module, "gate", None)) in (nn.Hardsigmoid, HardSigmoid) \
            and all(hasattr(module, name) for name in ("conv_reduce", "act1", "conv_expand")):
        return HardSigmoidSqueezeExcitation(None, module.conv_reduce, module.act1, module.conv_expand)
    return None


def fuse_squeeze_excitation(model: nn.Module) -> int:
    """Replaces, in place, every squeeze-excitation block gated by a hard sigmoid (torchvision's
    SqueezeExcitation with scale_activation=nn.Hardsigmoid, as in its MobileNetV3; timm's
    SqueezeExcite with gate_layer='hard_sigmoid', as in its MobileNetV3 and LCNet) by a
    HardSigmoidSqueezeExcitation sharing its layers: the gate's hard sigmoid and the multiplication
    become one hardsigmoid_gate pass. Any mode (it holds no statistics). Returns how many it replaced."""
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            fused = _hard_sigmoid_squeeze_excitation(child)
            if fused is not None:
                setattr(parent, name, fused.train(child.training))
                replaced += 1
    return replaced


# ---- whole blocks ---------------------------------------------------------------------------------
# An inverted-residual block rewritten module by module, as above, still makes two passes of its
# own: the squeeze's mean (a pooling kernel reading the depthwise output again) and the residual
# add. Seen whole, the mean is written by the pass that produces its input and the residual add
# joins the projection's BatchNorm pass; and the depthwise convolution, whose output cuDNN writes for
# that pass to read back, takes the BatchNorm, the activation and the mean as its epilogue.


class FusedInvertedResidual(nn.Module):
    """An inference inverted-residual or depthwise-separable block (MobileNetV3, LCNet) in which every
    pass between the convolutions is fused:

        y = norm1(conv1(x))                              the expansion (a depthwise-separable block has none)
        y, m = norm2(conv2(y)), mean of y per (n, c)     one kernel (depthwise_stage), or conv2 then
                                                         scale_shift_activation_mean: the squeeze, same pass
        y = hardsigmoid_gate(y, expand(act(reduce(m))))  the excitation as matrix products on m, (N, C)
        out = norm3(conv3(y)) + x                        scale_shift_residual_activation, where there is a skip

    norm1..3 are the block's BatchNorms folded with their activations (BatchNormActivation: buffers,
    no statistics); a block without squeeze-excitation runs norm2 alone, one whose last BatchNorm has
    an activation adds x after it (residual_activation). The convolutions are the block's own modules
    (shared). The depthwise stage runs as one hardact kernel (the convolution with the BatchNorm, the
    activation and the mean's sums as its epilogue) for channels-last CUDA float32/float16/bfloat16
    input when no gradient is wanted and not under torch.compile, where conv2 is a depthwise
    nn.Conv2d it covers (3x3 or 5x5, stride 1 or 2, no bias, a multiple of 4 channels up to 1024);
    else conv2 runs, then the pass. The squeeze-excitation's 1x1 convolutions are used as the matrices they are,
    reduce(m) = m @ W.view(Cr, C).T + b, one cuBLASLt kernel with the bias (and an nn.ReLU) in its
    epilogue (torch._addmm_activation, F.linear; in float32 hardact's own call, whose products are
    TF32 exactly when the convolutions would have been: torch.backends.cudnn.allow_tf32, on by
    default, where F.linear would follow the matmul setting, off by default). Where a gradient is
    wanted, or under torch.compile, float32 runs the convolutions themselves.

    Against the original block the results differ by rounding only: the BatchNorms are folded as
    BatchNormActivation's are, the matrix products on (N, C) sum in another order than cuDNN's 1x1
    convolutions on (N, C, 1, 1), the one-kernel depthwise stage sums in float32 in its own order and,
    in float16/bfloat16, does not round the convolution's output before its BatchNorm. Made by
    fuse_blocks, for inference; differentiable, with the BatchNorms frozen."""

    def __init__(self, expansion: tuple[nn.Module, BatchNormActivation] | None,
                 depthwise: tuple[nn.Module, BatchNormActivation],
                 squeeze: tuple[nn.Module, nn.Module, nn.Module] | None,
                 projection: tuple[nn.Module, BatchNormActivation], skip: bool):
        super().__init__()
        self.conv1, self.norm1 = expansion if expansion is not None else (None, None)
        self.conv2, self.norm2 = depthwise
        self.se_reduce, self.se_activation, self.se_expand = squeeze if squeeze is not None else (None, None, None)
        self.conv3, self.norm3 = projection
        self.skip = bool(skip)
        # Decided once: replace_activations may later swap the activation module, never for a ReLU.
        self.se_relu = squeeze is not None and type(squeeze[1]) is nn.ReLU
        self.depthwise_filter = _depthwise_filter(self.conv2)
        self._depthwise_key, self._depthwise_parameters = None, None

    def excitation(self, mean: torch.Tensor) -> torch.Tensor:
        """expand(activation(reduce(mean))) on the (N, C) mean: the gate before its hard sigmoid."""
        reduce, expand = self.se_reduce, self.se_expand
        # Views taken per call: .to() replaces a parameter's data, so a view kept from __init__ would go stale.
        weight = reduce.weight.flatten(1)
        # The one-kernel products below have no autograd formula: where a gradient is wanted, the
        # differentiable forms.
        grad = torch.is_grad_enabled()
        reduce_grad = grad and (mean.requires_grad or weight.requires_grad
                                or (reduce.bias is not None and reduce.bias.requires_grad))
        if mean.dtype == torch.float32:
            expand_grad = grad and (expand.weight.requires_grad
                                    or (expand.bias is not None and expand.bias.requires_grad))
            if reduce_grad or expand_grad or _is_compiling() or type(mean) is not torch.Tensor or not mean.is_cuda:
                squeezed = mean.reshape(mean.shape[0], mean.shape[1], 1, 1)
                return expand(self.se_activation(reduce(squeezed))).flatten(1)
            # PyTorch's float32 matrix products follow torch.backends.cuda.matmul.allow_tf32 (off by
            # default); the 1x1 convolutions these replace ran under cuDNN's TF32 setting, which the
            # products keep (TUNING.md#package-fused-ops).
            tf32 = torch.backends.cudnn.allow_tf32
            hidden = _C._linear_activation(mean, weight, reduce.bias, self.se_relu, tf32)
            if not self.se_relu:
                hidden = self.se_activation(hidden)
            return _C._linear_activation(hidden, expand.weight.flatten(1), expand.bias, False, tf32)
        if self.se_relu and reduce.bias is not None and not reduce_grad:
            hidden = torch._addmm_activation(reduce.bias, mean, weight.t())
        else:
            hidden = self.se_activation(F.linear(mean, weight, reduce.bias))
        return F.linear(hidden, expand.weight.flatten(1), expand.bias)

    def depthwise_parameters(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The depthwise stage's filters as float32 (K * K, C) and norm2's scale and shift as float32,
        the layout and type the one-kernel stage reads; made again only when one of them changed (moved,
        cast, or modified in place)."""
        weight, scale, shift = self.conv2.weight, self.norm2.scale, self.norm2.shift
        key = (weight.data_ptr(), weight._version, scale.data_ptr(), scale._version, shift.data_ptr(), shift._version)
        if key != self._depthwise_key:
            with torch.no_grad():
                taps = weight.detach().reshape(weight.shape[0], -1).t().float().contiguous()
                self._depthwise_parameters = (taps, scale.detach().float().contiguous(),
                                              shift.detach().float().contiguous())
            self._depthwise_key = key
        return self._depthwise_parameters

    def depthwise_stage(self, y: torch.Tensor, with_mean: bool) -> tuple[torch.Tensor, torch.Tensor | None] | None:
        """(norm2(conv2(y)), its mean per (n, c) where with_mean) in one kernel, or None where that kernel
        does not apply: a gradient wanted, torch.compile, autocast (the convolution would run in its
        dtype), a tensor subclass, not a channels-last CUDA float32/float16/bfloat16 tensor of the
        filter's dtype (the convolution would raise), or a convolution it does not cover
        (_depthwise_filter)."""
        spec = self.depthwise_filter
        if (spec is None or _is_compiling() or type(y) is not torch.Tensor or not y.is_cuda
                or y.dtype not in _DEPTHWISE_DTYPES or y.dtype != self.conv2.weight.dtype or y.dim() != 4
                or torch.is_autocast_enabled("cuda")
                or not y.is_contiguous(memory_format=torch.channels_last) or y.data_ptr() % (4 * y.element_size())):
            return None
        if torch.is_grad_enabled() and (y.requires_grad or self.conv2.weight.requires_grad):
            return None
        norm = self.norm2
        taps, scale, shift = self.depthwise_parameters()
        return _C._depthwise_conv_scale_shift_activation(y, taps, scale, shift, *spec, norm.activation, norm.min_val,
                                                         norm.max_val, with_mean)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x if self.conv1 is None else self.norm1(self.conv1(x))
        norm = self.norm2
        fused = self.depthwise_stage(y, self.se_reduce is not None)
        if fused is not None:
            y, mean = fused
            if mean is not None:
                y = hardsigmoid_gate(y, self.excitation(mean))
        elif self.se_reduce is None:
            y = norm(self.conv2(y))
        else:
            y, mean = scale_shift_activation_mean(self.conv2(y), norm.scale, norm.shift, norm.activation, norm.min_val,
                                                  norm.max_val)
            y = hardsigmoid_gate(y, self.excitation(mean))
        norm = self.norm3
        y = self.conv3(y)
        if not self.skip:
            return norm(y)
        if norm.activation == "identity":
            return scale_shift_residual_activation(y, norm.scale, norm.shift, x)
        return residual_activation(norm(y), x)  # the block adds x after the activation

    def extra_repr(self) -> str:
        squeeze = "none" if self.se_reduce is None else ("matrix products, ReLU epilogue" if self.se_relu else
                                                         "matrix products")
        return f"squeeze_excitation={squeeze}, skip={self.skip}"


def _package(module: nn.Module) -> str:
    return type(module).__module__.split(".")[0]


def _children(module: nn.Module) -> set[str]:
    return {name for name, _ in module.named_children()}


def _folded_norm(norm: nn.Module, activation: nn.Module | None = None) -> BatchNormActivation | None:
    """`norm` (timm's BatchNormAct2d with its own activation, or an nn.BatchNorm2d followed by
    `activation`, None for none) folded into a BatchNormActivation; one already folded as it is; None
    for anything else or a BatchNorm without running statistics."""
    if type(norm) is BatchNormActivation:
        return norm if activation is None else None
    if _is_timm_batchnorm_act(norm):
        if activation is not None or type(norm.drop) is not nn.Identity:
            return None
        activation = norm.act
    elif type(norm) is not nn.BatchNorm2d:
        return None
    spec = ("identity", -1.0, 1.0) if activation is None else _fused_activation(activation)
    if spec is None or not _foldable(norm):
        return None
    return BatchNormActivation.from_batchnorm(norm, *spec).to(norm.running_mean.device)


_DEPTHWISE_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _depthwise_filter(conv: nn.Module) -> tuple[int, int, int, int] | None:
    """(kernel_size, stride, pad_h, pad_w) of a depthwise convolution the one-kernel depthwise stage
    computes (FusedInvertedResidual.depthwise_stage): an nn.Conv2d with one filter per channel, no
    bias, square 3x3 or 5x5 filters, stride 1 or 2 in both dims, dilation 1, zero padding given as
    numbers below the filter size, and a multiple of 4 channels up to 1024; else None."""
    if type(conv) is not nn.Conv2d:
        return None
    channels = conv.in_channels
    k, stride, padding = conv.kernel_size, conv.stride, conv.padding
    if not (conv.groups == channels == conv.out_channels and conv.bias is None and k[0] == k[1] and k[0] in (3, 5)
            and stride[0] == stride[1] and stride[0] in (1, 2) and conv.dilation == (1, 1)
            and conv.padding_mode == "zeros" and isinstance(padding, tuple)
            and all(isinstance(p, int) and 0 <= p < k[0] for p in padding)
            and channels % 4 == 0 and channels <= 1024):
        return None
    return k[0], stride[0], padding[0], padding[1]


def _matrix_conv(conv: nn.Module) -> bool:
    """A 1x1 convolution with no padding and one group: on a (N, C, 1, 1) input, the linear map of
    its weight viewed as a matrix (stride and dilation have nothing to act on)."""
    return (type(conv) is nn.Conv2d and conv.kernel_size == (1, 1) and conv.groups == 1
            and conv.padding in ((0, 0), "valid", "same"))


def _squeeze_layers(module: nn.Module) -> tuple[nn.Module, nn.Module, nn.Module] | None:
    """(reduce, activation, expand) of a squeeze-excitation gated by a hard sigmoid whose squeeze is the
    mean over H and W (torchvision's SqueezeExcitation, timm's SqueezeExcite, or either already made a
    HardSigmoidSqueezeExcitation), with 1x1 convolutions and an elementwise activation hardact knows;
    else None."""
    layers = {"timm": {"conv_reduce", "act1", "conv_expand", "gate"},
              "torchvision": {"avgpool", "fc1", "activation", "fc2", "scale_activation"}}
    if type(module) is HardSigmoidSqueezeExcitation:
        fused = module
        pool = fused.pool
        if pool is not None and not (type(pool) is nn.AdaptiveAvgPool2d and pool.output_size in (1, (1, 1))):
            return None
    elif _children(module) == layers.get(_package(module)):  # no layer its known forward would skip
        fused = _hard_sigmoid_squeeze_excitation(module)
        if fused is None:
            return None
    else:
        return None
    if not (_matrix_conv(fused.reduce) and _matrix_conv(fused.expand) and _fused_activation(fused.activation)):
        return None
    return fused.reduce, fused.activation, fused.expand


def _inactive_in_eval(module: nn.Module) -> bool:
    """nn.Identity, or timm's DropPath: the identity outside training, whatever its drop rate."""
    return type(module) is nn.Identity or (type(module).__name__ == "DropPath" and _package(module) == "timm")


def _timm_block(block: nn.Module) -> FusedInvertedResidual | None:
    """timm's InvertedResidual or DepthwiseSeparableConv (timm.models._efficientnet_blocks) as a
    FusedInvertedResidual, or None. Their forwards, in timm 0.9 to 1.0:
      InvertedResidual:       conv_pw, bn1, conv_dw, bn2, aa, se, conv_pwl, bn3, then drop_path(x) + shortcut
      DepthwiseSeparableConv: conv_dw, bn1, aa, se, conv_pw, bn2, then drop_path(x) + shortcut
    with the skip where has_skip, the BatchNorms BatchNormAct2d (their activation inside); the
    space-to-depth stem (conv_s2d) and anti-aliasing (aa) are not fused: such blocks are left alone."""
    kind = type(block).__name__
    if _package(block) != "timm" or getattr(block, "conv_s2d", None) is not None \
            or not isinstance(getattr(block, "has_skip", None), bool):
        return None
    if kind == "InvertedResidual":
        names = {"conv_pw", "bn1", "conv_dw", "bn2", "aa", "se", "conv_pwl", "bn3", "drop_path"}
        if _children(block) != names:
            return None
        stages = [(block.conv_pw, block.bn1), (block.conv_dw, block.bn2), (block.conv_pwl, block.bn3)]
    elif kind == "DepthwiseSeparableConv":
        names = {"conv_dw", "bn1", "aa", "se", "conv_pw", "bn2", "drop_path"}
        if _children(block) != names:
            return None
        stages = [None, (block.conv_dw, block.bn1), (block.conv_pw, block.bn2)]
    else:
        return None
    if type(block.aa) is not nn.Identity or not _inactive_in_eval(block.drop_path):
        return None
    squeeze = None if type(block.se) is nn.Identity else _squeeze_layers(block.se)
    if squeeze is None and type(block.se) is not nn.Identity:
        return None
    return _fused_block(stages, squeeze, block.has_skip)


def _torchvision_block(block: nn.Module) -> FusedInvertedResidual | None:
    """torchvision's InvertedResidual (torchvision.models.mobilenetv3) as a FusedInvertedResidual, or
    None. Its forward: self.block, an nn.Sequential of Conv2dNormActivation layers (convolution,
    BatchNorm2d, activation or none) for the expansion (absent where it would not expand), the
    depthwise convolution and the projection, with a SqueezeExcitation before the projection or not;
    then `result += input` where use_res_connect."""
    if type(block).__name__ != "InvertedResidual" or _package(block) != "torchvision" \
            or _children(block) != {"block"} or type(block.block) is not nn.Sequential \
            or not isinstance(getattr(block, "use_res_connect", None), bool):
        return None
    layers = list(block.block)
    squeeze = None
    if len(layers) >= 3 and _conv_norm_activation(layers[-2]) is None:
        squeeze = _squeeze_layers(layers[-2])
        if squeeze is None:
            return None
        layers = layers[:-2] + layers[-1:]
    if len(layers) not in (2, 3):
        return None
    stages = [_conv_norm_activation(layer) for layer in layers]
    if any(stage is None for stage in stages):
        return None
    return _fused_block(([None] if len(stages) == 2 else []) + stages, squeeze, block.use_res_connect)


def _conv_norm_activation(layer: nn.Module) -> tuple[nn.Module, nn.Module, nn.Module | None] | None:
    """(convolution, BatchNorm, activation or None) of torchvision's Conv2dNormActivation (the
    nn.Sequential it is), or None."""
    if type(layer).__name__ != "Conv2dNormActivation" or _package(layer) != "torchvision" \
            or not isinstance(layer, nn.Sequential) or len(layer) not in (2, 3):
        return None
    parts = list(layer)
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


def _fused_block(stages: list, squeeze, skip: bool) -> FusedInvertedResidual | None:
    """The FusedInvertedResidual of [expansion or None, depthwise, projection] stages, each
    (convolution, norm) or (convolution, BatchNorm2d, activation or None); None when a convolution is
    not one or a norm cannot be folded."""
    folded = []
    for stage in stages:
        if stage is None:
            folded.append(None)
            continue
        conv, norm, *activation = stage
        norm = _folded_norm(norm, *activation)
        if norm is None or not isinstance(conv, nn.Conv2d):
            return None
        folded.append((conv, norm))
    return FusedInvertedResidual(folded[0], folded[1], squeeze, folded[2], skip)


def fuse_blocks(model: nn.Module) -> int:
    """Rewrites an eval-mode model in place: every inverted-residual and depthwise-separable block of
    timm's MobileNetV3 / LCNet family (timm's InvertedResidual and DepthwiseSeparableConv) and of
    torchvision's MobileNetV3 (its InvertedResidual) becomes one FusedInvertedResidual sharing its
    convolutions: the BatchNorms folded with their activations, the depthwise convolution, its
    BatchNorm and the squeeze's mean in one kernel, the excitation as matrix products, the residual add
    in the projection's BatchNorm pass. Returns how many blocks it replaced.

    A block is recognised by its class (name and package, whose forward is known) and the exact
    types of its layers; one that holds anything else is left alone: another child module, a
    convolution that is not nn.Conv2d, a BatchNorm without running statistics, an activation hardact
    does not fuse, a squeeze-excitation not gated by a hard sigmoid, anti-aliasing or
    space-to-depth, a submodule in training mode. Structure rather than torch.fx: fx tracing fails on
    the data-dependent Python of some timm models and replaces the modules by a flat graph, where a
    block's identity (and with it the proof that the rewrite is the same function) is lost. DropPath
    acts only in training, so the model must be in eval mode (else RuntimeError); the fused blocks'
    BatchNorms are frozen. Run fuse_batchnorm_activation and fuse_squeeze_excitation afterwards for
    the rest (stem, head, blocks left alone): they find nothing to redo inside the fused blocks,
    which hold folded buffers and the squeeze-excitation's layers, not BatchNorms or its module."""
    if model.training:
        raise RuntimeError("hardact.fuse_blocks: the model is in training mode; call model.eval() first (the "
                           "BatchNorms are folded and DropPath is dropped, as only inference allows)")
    fused = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            # BatchNormActivation does the same in either mode (fuse_batchnorm_activation's are
            # left in training mode): a block it already rewrote is fused too.
            if type(child).__name__ not in ("InvertedResidual", "DepthwiseSeparableConv") \
                    or any(m.training for m in child.modules() if type(m) is not BatchNormActivation):
                continue
            block = _timm_block(child) if _package(child) == "timm" else _torchvision_block(child)
            if block is not None:
                setattr(parent, name, block.train(False))
                fused += 1
    return fused


def optimize_for_inference(model: nn.Module) -> dict[str, int]:
    """All of hardact's inference rewrites, in place, on an eval-mode model (else RuntimeError), in
    this order: fuse_blocks, fuse_batchnorm_activation and fuse_squeeze_excitation for what the blocks
    left (stem, head, other blocks), replace_activations for the activation modules left. Returns how
    many each replaced: {"blocks", "batchnorms", "squeeze_excitations", "activations"}."""
    if model.training:
        raise RuntimeError("hardact.optimize_for_inference: the model is in training mode; call model.eval() first")
    return {"blocks": fuse_blocks(model), "batchnorms": fuse_batchnorm_activation(model),
            "squeeze_excitations": fuse_squeeze_excitation(model), "activations": replace_activations(model)}
