"""FusedInvertedResidual: an inference inverted-residual or depthwise-separable block with every pass
between its convolutions fused, and its construction from a block's stages (the block matchers'
common end)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.compiler import is_compiling as _is_compiling
# The hooks nn.Module.__call__ runs for every module; the one-call forward calls no module, so it
# steps aside while any is set (FusedInvertedResidual._one_call_arguments). These dicts are
# updated in place, never rebound.
from torch.nn.modules.module import (_global_backward_hooks, _global_backward_pre_hooks, _global_forward_hooks,
                                     _global_forward_pre_hooks)

from .. import _C
from ..functional import (hardsigmoid_gate, residual_activation, scale_shift_activation_mean,
                          scale_shift_residual_activation)
from ..modules import BatchNormActivation
from .matching import _depthwise_filter, _folded_norm
from .pointwise import PointwiseConv2d

__all__ = ["FusedInvertedResidual"]

# An inverted-residual block rewritten module by module (fuse_batchnorm_activation,
# fuse_squeeze_excitation) still makes two passes of its own: the squeeze's mean (a pooling kernel
# reading the depthwise output again) and the residual add. Seen whole, the mean is written by the
# pass that produces its input and the residual add joins the projection's BatchNorm pass; and the
# depthwise convolution, whose output cuDNN writes for that pass to read back, takes the BatchNorm,
# the activation and the mean as its epilogue.


_DEPTHWISE_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


# The dtypes of hardact's matrix products (_C._linear_activation): the excitation's products in them.
_EXCITATION_PRODUCT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _one_kernel_applies(y: torch.Tensor, weight: torch.Tensor, parameters) -> bool:
    """Whether the one-kernel depthwise stage may run on y with a filter of weight's dtype: no gradient
    wanted (of y or of any tensor in parameters), not under torch.compile or autocast (the convolution
    would run in autocast's dtype), a plain tensor (not a subclass), a 4-d channels-last CUDA
    float32/float16/bfloat16 tensor of the filter's dtype (the convolution would raise otherwise),
    aligned to four elements."""
    if (_is_compiling() or type(y) is not torch.Tensor or not y.is_cuda or y.dtype not in _DEPTHWISE_DTYPES
            or y.dtype != weight.dtype or y.dim() != 4 or torch.is_autocast_enabled("cuda")
            or not y.is_contiguous(memory_format=torch.channels_last) or y.data_ptr() % (4 * y.element_size())):
        return False
    return not (torch.is_grad_enabled() and (y.requires_grad or any(t.requires_grad for t in parameters)))


_ABSENT = {None: None}  # the source of an absent tensor (no expansion, no squeeze) in the one-call plan


def _one_call_convolution(conv: nn.Module) -> tuple | None:
    """A convolution's settings in a block's one-call forward, (stride, padding, dilation, groups, whether
    a PointwiseConv2d); None where the C++ call cannot stand in for its forward: not an nn.Conv2d or
    PointwiseConv2d, padding other than zeros given as numbers, or forward or _conv_forward replaced
    on the instance. Read once per plan: nothing changes them after construction."""
    if (type(conv) not in (nn.Conv2d, PointwiseConv2d) or conv.padding_mode != "zeros"
            or not isinstance(conv.padding, tuple) or not all(type(p) is int for p in conv.padding)
            or "forward" in conv.__dict__ or "_conv_forward" in conv.__dict__):
        return None
    return (tuple(conv.stride), tuple(conv.padding), tuple(conv.dilation), int(conv.groups),
            type(conv) is PointwiseConv2d)


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
    epilogue: hardact's own call, whose float32 products are TF32 exactly when the convolutions would
    have been (torch.backends.cudnn.allow_tf32, on by default, where F.linear would follow the matmul
    setting, off by default). Where a gradient is wanted, or under torch.compile, float32 runs the
    convolutions themselves and 16-bit types torch._addmm_activation and F.linear. For a CUDA
    torch.Tensor where no gradient is wanted, not under torch.compile, autocast or a
    __torch_function__ mode, with submodules of the plain types it knows (nn.Conv2d with zero
    padding given as numbers, BatchNormActivation, an nn.ReLU between the excitation's products) and
    no hook on them, the forward is one call into C++ (_C._fused_inverted_residual_forward): the same
    kernels in the same order, the same bits, without the Python module calls' host time; else
    forward_modules, in Python.

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
        # [key, taps, scale, shift]: depthwise_parameters' cache, shared with the one-call forward
        # (_C._fused_inverted_residual_forward), which checks the key and refills it in C++.
        self._depthwise_cache: list = [None, None, None, None]
        # The one-call forward's plan (_one_call_plan_for), made again when a submodule is replaced;
        # _one_call False runs the Python forward always (the tests' way to compare the two).
        self._one_call_plan: tuple | None = None
        self._one_call = True

    def __setstate__(self, state: dict) -> None:
        # A block pickled before the one-call forward existed: its caches, empty (remade on use).
        super().__setstate__(state)
        for name in ("_depthwise_key", "_depthwise_parameters"):
            self.__dict__.pop(name, None)
        self.__dict__.setdefault("_depthwise_cache", [None, None, None, None])
        self.__dict__.setdefault("_one_call_plan", None)
        self.__dict__.setdefault("_one_call", True)

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
        expand_grad = grad and (expand.weight.requires_grad or (expand.bias is not None and expand.bias.requires_grad))
        if (mean.dtype in _EXCITATION_PRODUCT_DTYPES and not (reduce_grad or expand_grad) and not _is_compiling()
                and type(mean) is torch.Tensor and mean.is_cuda):
            # hardact's own cuBLASLt call keeps each shape's plan (ATen's addmm ran the heuristic on
            # every call of an eager forward). PyTorch's float32 matrix products follow
            # torch.backends.cuda.matmul.allow_tf32 (off by default); the 1x1 convolutions these
            # replace ran under cuDNN's TF32 setting, which the products keep (TUNING.md#package-fused-ops).
            tf32 = torch.backends.cudnn.allow_tf32
            hidden = _C._linear_activation(mean, weight, reduce.bias, self.se_relu, tf32)
            if not self.se_relu:
                hidden = self.se_activation(hidden)
            return _C._linear_activation(hidden, expand.weight.flatten(1), expand.bias, False, tf32)
        if mean.dtype == torch.float32:
            squeezed = mean.reshape(mean.shape[0], mean.shape[1], 1, 1)
            return expand(self.se_activation(reduce(squeezed))).flatten(1)
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
        cache = self._depthwise_cache
        if key != cache[0]:
            with torch.no_grad():
                taps = weight.detach().reshape(weight.shape[0], -1).t().float().contiguous()
                cache[1:] = taps, scale.detach().float().contiguous(), shift.detach().float().contiguous()
            cache[0] = key
        return cache[1], cache[2], cache[3]

    def depthwise_stage(self, y: torch.Tensor, with_mean: bool) -> tuple[torch.Tensor, torch.Tensor | None] | None:
        """(norm2(conv2(y)), its mean per (n, c) where with_mean) in one kernel, or None where that kernel
        does not apply: a gradient wanted, torch.compile, autocast (the convolution would run in its
        dtype), a tensor subclass, not a channels-last CUDA float32/float16/bfloat16 tensor of the
        filter's dtype (the convolution would raise), or a convolution it does not cover
        (_depthwise_filter)."""
        spec = self.depthwise_filter
        if spec is None or not _one_kernel_applies(y, self.conv2.weight, (self.conv2.weight,)):
            return None
        norm = self.norm2
        taps, scale, shift = self.depthwise_parameters()
        return _C._depthwise_conv_scale_shift_activation(y, taps, scale, shift, *spec, norm.activation, norm.min_val,
                                                         norm.max_val, with_mean, False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._one_call and not _is_compiling():
            arguments = self._one_call_arguments()
            if arguments is not None:
                out = _C._fused_inverted_residual_forward(x, *arguments)
                if out is not None:
                    return out
        return self.forward_modules(x)

    def _one_call_plan_for(self, modules: tuple) -> tuple:
        """(modules, sources, settings, hook dicts) of the one-call forward for these submodules, sources
        None where it does not apply: a convolution the call cannot stand in for (_one_call_convolution),
        a norm other than a BatchNormActivation, a squeeze-excitation other than nn.Conv2d (or
        PointwiseConv2d) or nn.Linear products around an nn.ReLU, or a submodule whose forward was
        replaced on the instance (seen when the plan is made). sources: (dict, key)
        of each of the 16 tensors (the dicts nn.Module keeps, whose entries .to() and load_state_dict
        update in place); settings: the C++ call's tuple, read here once: nothing changes a
        convolution's stride or padding or a BatchNormActivation's activation after construction
        (replace_pointwise_convolutions, which changes a convolution's class, drops the plan)."""
        convolutions, norms = (self.conv1, self.conv2, self.conv3), (self.norm1, self.norm2, self.norm3)
        called = [m for m in (*convolutions, *norms, self.se_activation) if m is not None]
        refused = (modules, None, None, ())
        if any(_one_call_convolution(conv) is None for conv in convolutions if conv is not None):
            return refused
        if any(type(norm) is not BatchNormActivation for norm in norms if norm is not None):
            return refused
        if any("forward" in m.__dict__ for m in called):
            return refused
        squeeze = None
        if self.se_reduce is not None:
            if not self.se_relu or type(self.se_activation) is not nn.ReLU or any(
                    type(m) not in (nn.Conv2d, PointwiseConv2d, nn.Linear)
                    for m in (self.se_reduce, self.se_expand)):
                return refused
            squeeze = bool(self.se_activation.inplace)
        absent = (_ABSENT, None)

        def conv_sources(conv):
            return [absent, absent] if conv is None else [(conv._parameters, "weight"), (conv._parameters, "bias")]

        def norm_sources(norm):
            return [absent, absent] if norm is None else [(norm._buffers, "scale"), (norm._buffers, "shift")]

        def conv_settings(conv):
            return None if conv is None else _one_call_convolution(conv)

        def norm_settings(norm):
            return None if norm is None else (norm.activation, float(norm.min_val), float(norm.max_val))

        sources = (conv_sources(self.conv1) + norm_sources(self.norm1) + conv_sources(self.conv2)
                   + norm_sources(self.norm2) + conv_sources(self.se_reduce) + conv_sources(self.se_expand)
                   + conv_sources(self.conv3) + norm_sources(self.norm3))
        settings = (conv_settings(self.conv1), norm_settings(self.norm1), conv_settings(self.conv2),
                    norm_settings(self.norm2), squeeze, conv_settings(self.conv3), norm_settings(self.norm3))
        hooks = tuple(hook_dict for m in called for hook_dict in (m._forward_pre_hooks, m._forward_hooks,
                                                                 m._backward_pre_hooks, m._backward_hooks))
        return modules, tuple(sources), settings, hooks

    def _one_call_arguments(self) -> tuple | None:
        """The arguments after x of _C._fused_inverted_residual_forward, gathered from the modules'
        current tensors; None where the one call does not apply (_one_call_plan_for), a hook is set on a
        submodule the Python forward calls or globally (the one call runs no module), or torch.jit
        traces."""
        modules = tuple(self._modules.values())
        plan = self._one_call_plan
        if plan is None or plan[0] != modules:  # a submodule replaced (nn.Module has identity equality)
            plan = self._one_call_plan = self._one_call_plan_for(modules)
        _, sources, settings, hooks = plan
        if sources is None or any(hooks) or _global_forward_hooks or _global_forward_pre_hooks \
                or _global_backward_hooks or _global_backward_pre_hooks or torch._C._get_tracing_state():
            return None
        return [d[key] for d, key in sources], settings, self.depthwise_filter, self.skip, self._depthwise_cache

    def forward_modules(self, x: torch.Tensor) -> torch.Tensor:
        """The forward module by module and function by function: where a gradient is wanted, under
        torch.compile, and wherever the one call (_C._fused_inverted_residual_forward) does not apply."""
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
