"""timm's ghost blocks (GhostNet v1 and v2's GhostBottleneck, GhostNet v3's GhostBottleneckV3,
RepGhostNet's RepGhostBottleneck) matched as FusedGhostBottleneck."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.compiler import is_compiling as _is_compiling

from .. import _C
from ..functional import (concatenate_channels, hardsigmoid_gate, residual_activation, scale_shift_activation_mean,
                          scale_shift_residual_activation)
from ..modules import BatchNormActivation
from .fused_block import FusedInvertedResidual, _one_kernel_applies
from .matching import _children, _depthwise_filter, _folded_norm, _fused_activation, _squeeze_layers
from .timm_blocks import _inactive_in_eval

__all__ = ["FusedGhostBottleneck"]

# A ghost module makes half its channels with a 1x1 convolution (the primary) and the other half from
# those with a depthwise convolution (the cheap operation), then concatenates them. The concatenation
# is a copy the original makes too and is kept; what the rewrite removes are the passes around it:
# each BatchNorm with its activation in one pass, the cheap operation, its BatchNorm and activation in
# one kernel (the depthwise stage of FusedInvertedResidual), the squeeze's mean from the passes that
# write each half, the shortcut's last BatchNorm with the residual add, and (v2) the nearest upsampling
# of the attention gate, read by broadcasting instead of written out (TUNING.md#depthwise-stage,
# TUNING.md#package-fused-ops).

# The class names fuse_blocks hands to _ghost_block.
_GHOST_BLOCKS = ("GhostBottleneck", "GhostBottleneckV3", "RepGhostBottleneck")


class _ConvolutionStage(nn.Module):
    """(act(conv(y) * scale + shift), its mean per (n, c) or None), `norm` holding scale, shift and
    act, with RepGhost's identity branch where `identity` is given: act(conv(y) * scale + shift +
    y * identity.scale + identity.shift). One hardact kernel where it applies: a depthwise convolution
    _depthwise_filter covers, no gradient wanted, not under torch.compile, a channels-last CUDA
    float32/float16/bfloat16 y of the filter's dtype; the identity branch is then a term of the
    centre tap (the reparameterisation RepGhost's switch_to_deploy makes, rounding only). Elsewhere
    the convolution runs, then one fused pass (the mean in it)."""

    def __init__(self, conv: nn.Conv2d, norm: BatchNormActivation, identity: BatchNormActivation | None = None):
        super().__init__()
        self.conv, self.norm, self.identity = conv, norm, identity
        self.filter = _depthwise_filter(conv)
        self._kernel_key, self._kernel_parameters = None, None

    def _parameter_tensors(self) -> list[torch.Tensor]:
        """What kernel_parameters() is made of: a change to any of them makes it again."""
        tensors = [self.conv.weight, self.norm.scale, self.norm.shift]
        return tensors + ([self.identity.scale, self.identity.shift] if self.identity is not None else [])

    def _make_kernel_parameters(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        weight, scale, shift = self.conv.weight.detach(), self.norm.scale, self.norm.shift
        taps = weight.reshape(weight.shape[0], -1)
        if self.identity is None:
            return taps.t().float().contiguous(), scale.float().contiguous(), shift.float().contiguous()
        taps = taps.double() * scale.double()[:, None]
        taps[:, taps.shape[1] // 2] += self.identity.scale.double()
        shift = shift.double() + self.identity.shift.double()
        return taps.t().float().contiguous(), torch.ones_like(shift, dtype=torch.float32), shift.float().contiguous()

    def kernel_parameters(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The one kernel's filters as float32 (K * K, C), its scale and shift as float32 (with an
        identity branch: the scale in the taps, the identity's at the centre, the shifts summed, the
        scale ones). Made again only when one of their sources changed (moved, cast, or modified in place)."""
        key = tuple((t.data_ptr(), t._version, t.dtype) for t in self._parameter_tensors())
        if key != self._kernel_key:
            with torch.no_grad():
                self._kernel_parameters = self._make_kernel_parameters()
            self._kernel_key = key
        return self._kernel_parameters

    def one_kernel(self, y: torch.Tensor, with_mean: bool,
                   concatenate: bool = False) -> tuple[torch.Tensor, torch.Tensor | None] | None:
        """The stage in one kernel, or None where it does not apply (FusedInvertedResidual.depthwise_stage's
        conditions: _one_kernel_applies). With `concatenate`, the kernel writes torch.cat([y, stage(y)], 1)
        (a ghost module's halves) and the mean is the stage's; None unless the stage keeps y's size
        (stride 1, padding kernel_size // 2)."""
        spec = self.filter
        if spec is None or not _one_kernel_applies(y, self.conv.weight, self._parameter_tensors()):
            return None
        kernel_size, stride, pad_h, pad_w = spec
        if concatenate and not (stride == 1 and pad_h == pad_w == kernel_size // 2):
            return None
        norm = self.norm
        taps, scale, shift = self.kernel_parameters()
        return _C._depthwise_conv_scale_shift_activation(y, taps, scale, shift, *spec, norm.activation, norm.min_val,
                                                         norm.max_val, with_mean, concatenate)

    def forward(self, y: torch.Tensor, with_mean: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        fused = self.one_kernel(y, with_mean)
        if fused is not None:
            return fused
        norm, z = self.norm, self.convolve(y)
        if self.identity is None:
            if with_mean:
                return scale_shift_activation_mean(z, norm.scale, norm.shift, norm.activation, norm.min_val,
                                                   norm.max_val)
            return norm(z), None
        z = scale_shift_residual_activation(z, norm.scale, norm.shift, self.identity(y), norm.activation,
                                            norm.min_val, norm.max_val)
        if not with_mean:
            return z, None
        return z, z.mean((2, 3), dtype=torch.float64 if z.dtype == torch.float64 else torch.float32).to(z.dtype)

    def convolve(self, y: torch.Tensor) -> torch.Tensor:
        return self.conv(y)


def _strided_like(weight: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """weight in reference's dtype and strides (differentiably): a convolution's output layout follows
    its filter's, which should be the branches' own, as in the original."""
    return torch.empty_like(reference, requires_grad=False).copy_(weight)


class _ReparameterisedStage(_ConvolutionStage):
    """GhostNet v3's re-parameterisable branches as one convolution: act(sum of norm_i(conv_i(y)) +
    skip(y)), every conv_i sharing the input, groups and stride, the smaller filters centred in the
    largest, skip an optional BatchNorm (a depthwise identity). The sum is one convolution by
    sum_i pad(W_i * scale_i) (+ skip.scale at the centre) with the shift sum_i shift_i (+
    skip.shift), the form timm's switch_to_deploy makes: the same function up to rounding. The
    filter is made from the branches' (shared) once per change, in the graph under torch.compile;
    where a gradient is wanted the branches run as the original runs them; the shift, from frozen
    BatchNorms, is made once."""

    def __init__(self, branches: list[tuple[nn.Conv2d, BatchNormActivation]], skip: BatchNormActivation | None,
                 activation: tuple[str, float, float]):
        main = max((conv for conv, _ in branches), key=lambda conv: conv.kernel_size[0])
        with torch.no_grad():
            shift = sum(norm.shift.double() for _, norm in branches)
            if skip is not None:
                shift = shift + skip.shift.double()
        dtype = torch.float64 if branches[0][1].shift.dtype == torch.float64 else torch.float32
        super().__init__(main, BatchNormActivation(torch.ones_like(shift, dtype=dtype), shift.to(dtype), *activation))
        self.branch_convs = nn.ModuleList(conv for conv, _ in branches)
        self.branch_norms = nn.ModuleList(norm for _, norm in branches)
        self.skip = skip
        self._weight_key, self._weight = None, None

    def _parameter_tensors(self) -> list[torch.Tensor]:
        return [t for conv, norm in zip(self.branch_convs, self.branch_norms) for t in (conv.weight, norm.scale)] + \
            ([self.skip.scale] if self.skip is not None else []) + [self.norm.shift]

    def weight(self, dtype: torch.dtype) -> torch.Tensor:
        """sum_i pad(W_i * scale_i) (+ skip.scale at the centre), computed in `dtype`; differentiable."""
        size = self.conv.kernel_size[0]
        weight = 0
        for conv, norm in zip(self.branch_convs, self.branch_norms):
            pad = (size - conv.kernel_size[0]) // 2
            weight = weight + F.pad(conv.weight.to(dtype) * norm.scale.to(dtype).view(-1, 1, 1, 1), [pad] * 4)
        if self.skip is not None:
            centre = torch.zeros_like(weight)
            centre[:, 0, size // 2, size // 2] = self.skip.scale.to(dtype)
            weight = weight + centre
        return weight

    def _branches(self, y: torch.Tensor) -> torch.Tensor:
        """sum_i conv_i(y) * scale_i (+ skip.scale * y), each branch its own convolution as the original
        runs it: where a gradient is wanted, the summed filter's float32 gradients strayed from the
        original's on the GPU (GhostNet v3's input gradient by 1.5e-3 of its largest value, the
        original's own error 7e-7), the branches' do not."""
        z = None
        for conv, norm in zip(self.branch_convs, self.branch_norms):
            term = conv(y) * norm.scale.to(y.dtype).view(1, -1, 1, 1)
            z = term if z is None else z + term
        if self.skip is not None:
            z = z + y * self.skip.scale.to(y.dtype).view(1, -1, 1, 1)
        return z

    def _make_kernel_parameters(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        taps = self.weight(torch.float64).reshape(self.conv.out_channels, -1)
        return taps.t().float().contiguous(), self.norm.scale.float().contiguous(), self.norm.shift.float().contiguous()

    def convolve(self, y: torch.Tensor) -> torch.Tensor:
        conv = self.conv
        compute = torch.float64 if conv.weight.dtype == torch.float64 else torch.float32
        if not _is_compiling() and torch.is_grad_enabled() and (
                y.requires_grad or any(t.requires_grad for t in self._parameter_tensors())):
            return self._branches(y)
        # Under torch.compile: made in the graph (no cache is set while tracing).
        if _is_compiling():
            weight = _strided_like(self.weight(compute), conv.weight)
        else:
            key = tuple((t.data_ptr(), t._version, t.dtype) for t in self._parameter_tensors())
            if key != self._weight_key:
                with torch.no_grad():
                    self._weight = _strided_like(self.weight(torch.float64), conv.weight)
                self._weight_key = key
            weight = self._weight
        return F.conv2d(y, weight, None, conv.stride, conv.padding, conv.dilation, conv.groups)


class FusedGhostBottleneck(nn.Module):
    """An inference ghost bottleneck (timm's GhostBottleneck of GhostNet v1 and v2, GhostBottleneckV3,
    RepGhostBottleneck) with the passes between its convolutions fused:

        x1 = primary(x)                            the ghost module: the convolution, then its BatchNorm
        x2 = cheap(x1)                             and activation in one pass; the cheap depthwise
        y = cat(x1, x2)  (RepGhost: y = x2)        convolution, its BatchNorm and activation (RepGhost's
                                                   identity branch) in one kernel (_ConvolutionStage)
        y = y * sigmoid(attention(pool(x)))        GhostNet v2's DFC attention, its gate broadcast
        y, m = depthwise(y), mean                  stride 2: the depthwise stage, with the squeeze's mean
        y = hardsigmoid_gate(y, excitation(m))     the excitation as matrix products on m (N, C)
        out = ghost2(y) + shortcut(x)              the shortcut's last BatchNorm and the add in one pass

    The squeeze's mean m comes from the pass that writes its input: the depthwise stage's kernel, or,
    where the squeeze follows the first ghost module, its two halves' passes (the means concatenated,
    (N, C)); after v2's attention, from y. The concatenation is written by the cheap stage's kernel,
    beside its own half, where that kernel applies; else it is the copy the original makes, by
    concatenate_channels (torch.cat's bits, one hardact copy for channels-last CUDA halves). The
    convolutions are the block's own modules (shared); the BatchNorms are folded (BatchNormActivation,
    frozen); GhostNet v3's branches are summed into one convolution per stage (_ReparameterisedStage).
    Against the original the results differ by rounding only (as FusedInvertedResidual's; RepGhost's
    identity branch, in the one-kernel stage, is a term of the centre tap). For inference;
    differentiable, with the BatchNorms frozen."""

    excitation = FusedInvertedResidual.excitation

    def __init__(self, ghost1: tuple, attention: nn.Sequential | None, depthwise: _ConvolutionStage | None,
                 squeeze: tuple[nn.Module, nn.Module, nn.Module] | None, ghost2: tuple,
                 shortcut: tuple[_ConvolutionStage, nn.Conv2d, BatchNormActivation] | None, concatenate: bool):
        super().__init__()
        self.primary1, self.cheap1 = ghost1
        self.attention = attention
        self.depthwise = depthwise
        self.se_reduce, self.se_activation, self.se_expand = squeeze if squeeze is not None else (None, None, None)
        # Decided once: replace_activations may later swap the activation module, never for a ReLU.
        self.se_relu = squeeze is not None and type(squeeze[1]) is nn.ReLU
        self.primary2, self.cheap2 = ghost2
        self.shortcut_depthwise, self.shortcut_conv, self.shortcut_norm = shortcut if shortcut is not None else \
            (None, None, None)
        self.concatenate = bool(concatenate)

    def ghost(self, x: torch.Tensor, first: bool, with_mean: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        """A ghost module's output and, where asked, its mean per (n, c) from the passes writing it."""
        primary, cheap = (self.primary1, self.cheap1) if first else (self.primary2, self.cheap2)
        x1, m1 = primary(x, with_mean and self.concatenate)
        if self.concatenate:  # both halves written by the cheap stage's kernel where it applies
            halves = cheap.one_kernel(x1, with_mean, concatenate=True)
            if halves is not None:
                y, m2 = halves
                return y, (torch.cat([m1, m2], 1) if with_mean else None)
        x2, m2 = cheap(x1, with_mean)
        if not self.concatenate:
            return x2, m2
        return concatenate_channels([x1, x2]), (torch.cat([m1, m2], 1) if with_mean else None)

    def attend(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """GhostModuleV2's gate: y * interpolate(sigmoid(attention(avg_pool2d(x, 2, 2))), y's size,
        nearest). Where y is twice the gate's size, nearest interpolation repeats each value 2x2
        (PyTorch's nearest index is then i // 2): the gate is read through a broadcast view, not written."""
        gate = torch.sigmoid(self.attention(F.avg_pool2d(x, kernel_size=2, stride=2)))
        (n, c, height, width), (h, w) = y.shape, gate.shape[-2:]
        if height == 2 * h and width == 2 * w and gate.shape[:2] == y.shape[:2]:
            return (y.view(n, c, h, 2, w, 2) * gate.view(n, c, h, 1, w, 1)).view(n, c, height, width)
        return y * F.interpolate(gate, size=(height, width), mode="nearest")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        squeeze = self.se_reduce is not None
        y, mean = self.ghost(x, True, squeeze and self.depthwise is None and self.attention is None)
        if self.attention is not None:
            y = self.attend(x, y)
        if self.depthwise is not None:
            y, mean = self.depthwise(y, squeeze)
        if squeeze:
            if mean is None:
                mean = y.mean((2, 3))
            y = hardsigmoid_gate(y, self.excitation(mean))
        y, _ = self.ghost(y, False, False)
        if self.shortcut_conv is None:
            return residual_activation(y, x)
        s, _ = self.shortcut_depthwise(x)
        norm = self.shortcut_norm
        return scale_shift_residual_activation(self.shortcut_conv(s), norm.scale, norm.shift, y)

    def extra_repr(self) -> str:
        kind = "concatenated halves" if self.concatenate else "RepGhost"
        return (f"{kind}, attention={self.attention is not None}, stride2={self.depthwise is not None}, "
                f"squeeze_excitation={self.se_reduce is not None}, shortcut={self.shortcut_conv is not None}")


# ---- matchers ------------------------------------------------------------------------------------

def _conv_norm_groups(sequence: nn.Module) -> list[tuple[nn.Conv2d, BatchNormActivation]] | None:
    """An nn.Sequential of convolutions, each followed by a BatchNorm (nn.BatchNorm2d, or one already
    folded) and an activation hardact fuses or none, as (convolution, folded norm) pairs; None for
    anything else. The Sequential applies them in turn, so the pairs compute what it computes."""
    if type(sequence) is not nn.Sequential:
        return None
    layers, groups, i = list(sequence), [], 0
    while i < len(layers):
        if type(layers[i]) is not nn.Conv2d or i + 1 >= len(layers):
            return None
        conv, norm, i = layers[i], layers[i + 1], i + 2
        activation = None
        if i < len(layers) and type(layers[i]) is not nn.Conv2d:
            activation, i = layers[i], i + 1
        folded = _with_activation(_folded_norm(norm), activation)
        if folded is None:
            return None
        groups.append((conv, folded))
    return groups


def _with_activation(norm: BatchNormActivation | None, activation: nn.Module | None) -> BatchNormActivation | None:
    """A folded norm without activation followed by `activation` (None for none) as one folded norm
    (sharing its buffers); None where the activation is not one hardact fuses or the norm has its own.
    fuse_batchnorm_activation leaves a BatchNorm followed by nn.Identity so: folded, then the identity."""
    if norm is None or activation is None:
        return norm
    spec = _fused_activation(activation)
    if spec is None or norm.activation != "identity":
        return None
    return norm if spec[0] == "identity" else BatchNormActivation(norm.scale, norm.shift, *spec)


def _of(module: nn.Module, name: str, file: str) -> bool:
    return type(module).__name__ == name and type(module).__module__ == f"timm.models.{file}"


def _attention(module: nn.Module) -> nn.Sequential | None:
    """GhostModuleV2's (and V3's) DFC attention: short_conv, three convolutions each with a BatchNorm
    (folded), as one nn.Sequential, where gate_fn is an nn.Sigmoid; else None."""
    if type(getattr(module, "gate_fn", None)) is not nn.Sigmoid:
        return None
    groups = _conv_norm_groups(getattr(module, "short_conv", None))
    if groups is None or len(groups) != 3:
        return None
    return nn.Sequential(*[layer for group in groups for layer in group])


def _ghost_module(module: nn.Module) -> tuple[tuple, nn.Sequential | None] | None:
    """((primary stage, cheap stage), attention or None) of timm's GhostModule or GhostModuleV2
    (timm.models.ghostnet), or None. Their forwards (timm 1.0):
      GhostModule:   x1 = primary_conv(x); x2 = cheap_operation(x1); cat([x1, x2], 1)[:, :out_chs]
      GhostModuleV2: the same, times interpolate(gate_fn(short_conv(avg_pool2d(x, 2, 2))), nearest)
    primary_conv and cheap_operation each a convolution, BatchNorm and activation, short_conv three
    convolutions each with a BatchNorm, gate_fn an nn.Sigmoid. Taken only where the halves make
    exactly out_chs channels (the slice a no-op)."""
    if _of(module, "GhostModule", "ghostnet"):
        names, attention = {"primary_conv", "cheap_operation"}, None
    elif _of(module, "GhostModuleV2", "ghostnet"):
        names, attention = {"primary_conv", "cheap_operation", "short_conv", "gate_fn"}, _attention(module)
        if attention is None:
            return None
    else:
        return None
    if _children(module) != names:
        return None
    primary, cheap = _conv_norm_groups(module.primary_conv), _conv_norm_groups(module.cheap_operation)
    if primary is None or cheap is None or len(primary) != 1 or len(cheap) != 1:
        return None
    (conv1, norm1), (conv2, norm2) = primary[0], cheap[0]
    if conv2.in_channels != conv1.out_channels or conv1.out_channels + conv2.out_channels != module.out_chs:
        return None
    return (_ConvolutionStage(conv1, norm1), _ConvolutionStage(conv2, norm2)), attention


def _repghost_module(module: nn.Module) -> tuple | None:
    """(primary stage, cheap stage) of timm's RepGhostModule (timm.models.repghost) in its training
    form, or None. Its forward (timm 1.0): x1 = primary_conv(x); x2 = cheap_operation(x1) plus
    bn(conv(x1)) for each (conv, bn) of (fusion_conv, fusion_bn); relu(x2). primary_conv a
    convolution, BatchNorm and activation; cheap_operation a depthwise convolution (stride 1, centred
    padding) and BatchNorm; fusion_conv one nn.Identity (fusion_bn one BatchNorm) or none; relu an
    activation hardact fuses. The reparameterised form (switch_to_deploy) is left alone."""
    if not _of(module, "RepGhostModule", "repghost") \
            or _children(module) != {"primary_conv", "fusion_conv", "fusion_bn", "cheap_operation", "relu"} \
            or type(module.fusion_conv) is not nn.Sequential or type(module.fusion_bn) is not nn.Sequential:
        return None
    primary, cheap = _conv_norm_groups(module.primary_conv), _conv_norm_groups(module.cheap_operation)
    if primary is None or cheap is None or len(primary) != 1 or len(cheap) != 1 or len(module.cheap_operation) != 2:
        return None
    (conv1, norm1), (conv2, cheap_norm) = primary[0], cheap[0]
    # The activation follows the sum of the branches: the stage's norm is the cheap BatchNorm with it.
    norm2 = _with_activation(cheap_norm, module.relu)
    k = conv2.kernel_size
    if norm2 is None or not (conv2.groups == conv2.in_channels == conv2.out_channels == conv1.out_channels
                             and conv2.stride == (1, 1) and conv2.dilation == (1, 1) and k[0] == k[1] and k[0] % 2
                             and conv2.padding == (k[0] // 2, k[1] // 2) and conv2.padding_mode == "zeros"):
        return None
    identity = None
    if len(module.fusion_conv) != len(module.fusion_bn) or len(module.fusion_conv) > 1:
        return None
    if len(module.fusion_conv) == 1:
        identity = _folded_norm(module.fusion_bn[0])
        if type(module.fusion_conv[0]) is not nn.Identity or identity is None or identity.activation != "identity":
            return None
    return _ConvolutionStage(conv1, norm1), _ConvolutionStage(conv2, norm2, identity)


def _conv_bn(module: nn.Module) -> tuple[nn.Conv2d, BatchNormActivation] | None:
    """(convolution, folded norm) of timm's ConvBnAct (timm.models._efficientnet_blocks) as GhostNet v3's
    branches make it: no activation, skip or anti-aliasing; its forward is then bn1(conv(x)). Else None."""
    if not _of(module, "ConvBnAct", "_efficientnet_blocks") \
            or _children(module) != {"conv", "bn1", "aa", "drop_path"} or module.has_skip is not False \
            or type(module.aa) is not nn.Identity or not _inactive_in_eval(module.drop_path) \
            or type(module.conv) is not nn.Conv2d:
        return None
    norm = _folded_norm(module.bn1)
    return None if norm is None or norm.activation != "identity" else (module.conv, norm)


def _reparameterised(branches: list, skip: BatchNormActivation | None,
                     activation: nn.Module) -> _ReparameterisedStage | None:
    """The _ReparameterisedStage of act(sum of the branches (+ skip)), or None where a branch is not
    one, the branches do not share input, output, groups and stride, a filter is not square and odd
    or not centred in the largest, a convolution has a bias, dilation or non-zero padding mode, the
    skip is not a depthwise identity, or the activation is not one hardact fuses."""
    spec = _fused_activation(activation)
    if spec is None or not branches or any(branch is None for branch in branches):
        return None
    main = max((conv for conv, _ in branches), key=lambda conv: conv.kernel_size[0])
    size = main.kernel_size[0]
    for conv, _ in branches:
        k = conv.kernel_size
        if not (k[0] == k[1] and k[0] % 2 and conv.bias is None and conv.dilation == (1, 1)
                and conv.padding_mode == "zeros" and isinstance(conv.padding, tuple)
                and (conv.in_channels, conv.out_channels, conv.groups, conv.stride)
                == (main.in_channels, main.out_channels, main.groups, main.stride)
                and conv.padding == tuple(p - (size - k[0]) // 2 for p in main.padding)):
            return None
    if skip is not None and not (skip.activation == "identity" and main.stride == (1, 1)
                                 and main.groups == main.in_channels == main.out_channels
                                 and main.padding == (size // 2, size // 2)):
        return None
    return _ReparameterisedStage(branches, skip, spec)


def _ghost_module_v3(module: nn.Module) -> tuple[tuple, nn.Sequential | None] | None:
    """((primary stage, cheap stage), attention or None) of timm's GhostModuleV3 in its training form
    (infer_mode False), or None. Its forward (timm 1.0):
      x1 = primary_activation(sum of primary_rpr_conv[i](x))
      x2 = cheap_activation(cheap_rpr_scale(x1) + cheap_rpr_skip(x1) + sum of cheap_rpr_conv[i](x1))
      out = cat([x1, x2], 1); mode "shortcut": out[:, :out_chs] times GhostModuleV2's attention gate
    the branches ConvBnAct without activation (cheap_rpr_scale a depthwise 1x1, cheap_rpr_conv
    depthwise), cheap_rpr_skip a BatchNorm; each sum is one _ReparameterisedStage. Taken only where
    the halves make exactly out_chs channels."""
    names = {"gate_fn", "primary_conv", "cheap_operation", "primary_rpr_conv", "primary_activation",
             "cheap_rpr_skip", "cheap_rpr_conv", "cheap_rpr_scale", "cheap_activation", "short_conv"}
    if not _of(module, "GhostModuleV3", "ghostnet") or module.infer_mode is not False \
            or _children(module) != names or type(module.primary_rpr_conv) is not nn.ModuleList \
            or type(module.cheap_rpr_conv) is not nn.ModuleList \
            or getattr(module, "primary_rpr_skip", None) is not None \
            or getattr(module, "primary_rpr_scale", None) is not None:
        return None
    if module.mode == "shortcut":
        attention = _attention(module)
        if attention is None:
            return None
    elif type(module.short_conv) is nn.Identity:
        attention = None
    else:
        return None
    primary = _reparameterised([_conv_bn(m) for m in module.primary_rpr_conv], None, module.primary_activation)
    skip = _folded_norm(module.cheap_rpr_skip)
    cheap = None if skip is None else _reparameterised(
        [_conv_bn(m) for m in module.cheap_rpr_conv] + [_conv_bn(module.cheap_rpr_scale)], skip,
        module.cheap_activation)
    if primary is None or cheap is None or cheap.conv.in_channels != primary.conv.out_channels \
            or primary.conv.out_channels + cheap.conv.out_channels != module.out_chs:
        return None
    return (primary, cheap), attention


def _ghost_block(block: nn.Module) -> FusedGhostBottleneck | None:
    """timm's GhostBottleneck (timm.models.ghostnet, GhostNet v1 and v2) or RepGhostBottleneck
    (timm.models.repghost) as a FusedGhostBottleneck, or None. Their forwards (timm 1.0):
        shortcut = x; x = ghost1(x)
        if conv_dw is not None: x = bn_dw(conv_dw(x))
        if se is not None: x = se(x)
        x = ghost2(x); x += shortcut(shortcut)
    conv_dw and bn_dw (stride 2) and se absent (None) or present; shortcut an empty nn.Sequential or
    a depthwise convolution, BatchNorm, 1x1 convolution and BatchNorm; ghost1 a GhostModule or
    GhostModuleV2 and ghost2 a GhostModule (RepGhost: both RepGhostModule); se timm's SqueezeExcite
    gated by a hard sigmoid. A block holding anything else is left alone."""
    if _of(block, "GhostBottleneckV3", "ghostnet"):
        return _ghost_block_v3(block)
    if _of(block, "GhostBottleneck", "ghostnet"):
        first, second = _ghost_module(block.ghost1), _ghost_module(block.ghost2)
        if first is None or second is None or second[1] is not None:
            return None
        (ghost1, attention), ghost2, concatenate = first, second[0], True
    elif _of(block, "RepGhostBottleneck", "repghost"):
        ghost1, ghost2 = _repghost_module(block.ghost1), _repghost_module(block.ghost2)
        attention, concatenate = None, False
        if ghost1 is None or ghost2 is None:
            return None
    else:
        return None
    optional = _children(block) - {"ghost1", "ghost2", "shortcut"}
    if not optional <= {"conv_dw", "bn_dw", "se"} or ("conv_dw" in optional) != ("bn_dw" in optional) \
            or any(name not in optional and getattr(block, name, None) is not None
                   for name in ("conv_dw", "bn_dw", "se")):
        return None
    depthwise = None
    if "conv_dw" in optional:
        norm = _folded_norm(block.bn_dw)
        if norm is None or type(block.conv_dw) is not nn.Conv2d:
            return None
        depthwise = _ConvolutionStage(block.conv_dw, norm)
    return _bottleneck(ghost1, attention, depthwise, block.se if "se" in optional else None, ghost2, block.shortcut,
                       concatenate)


def _ghost_block_v3(block: nn.Module) -> FusedGhostBottleneck | None:
    """timm's GhostBottleneckV3 (timm.models.ghostnet) in its training form (infer_mode False) as a
    FusedGhostBottleneck, or None. Its forward (timm 1.0):
        shortcut = x; x = ghost1(x)
        if stride > 1: x = dw_rpr_scale(x) + sum of dw_rpr_conv[i](x)
        x = se(x); x = ghost2(x); x += shortcut(shortcut)
    ghost1 and ghost2 GhostModuleV3 (ghost2 without attention), the stride-2 branches ConvBnAct
    without activation (one _ReparameterisedStage; conv_dw and bn_dw, used only in infer mode,
    nn.Identity), se nn.Identity or timm's SqueezeExcite gated by a hard sigmoid, shortcut
    nn.Identity or as GhostBottleneck's."""
    names = {"conv_dw", "bn_dw", "ghost1", "dw_rpr_conv", "dw_rpr_scale", "se", "ghost2", "shortcut"}
    if _children(block) != names or block.infer_mode is not False or getattr(block, "dw_rpr_skip", None) is not None \
            or type(block.conv_dw) is not nn.Identity or type(block.bn_dw) is not nn.Identity \
            or type(block.dw_rpr_conv) is not nn.ModuleList or not isinstance(block.stride, int):
        return None
    first, second = _ghost_module_v3(block.ghost1), _ghost_module_v3(block.ghost2)
    if first is None or second is None or second[1] is not None:
        return None
    depthwise = None
    if block.stride > 1:
        depthwise = _reparameterised([_conv_bn(m) for m in block.dw_rpr_conv] + [_conv_bn(block.dw_rpr_scale)],
                                     None, nn.Identity())
        if depthwise is None:
            return None
    se = None if type(block.se) is nn.Identity else block.se
    shortcut = nn.Sequential() if type(block.shortcut) is nn.Identity else block.shortcut
    return _bottleneck(first[0], first[1], depthwise, se, second[0], shortcut, True)


def _bottleneck(ghost1: tuple, attention: nn.Sequential | None, depthwise: _ConvolutionStage | None,
                se: nn.Module | None, ghost2: tuple, shortcut: nn.Module,
                concatenate: bool) -> FusedGhostBottleneck | None:
    """The FusedGhostBottleneck of matched parts, the squeeze-excitation (or None) and shortcut
    (an nn.Sequential: empty, or a convolution and BatchNorm twice, no activation) still to match."""
    squeeze = None
    if se is not None:
        squeeze = _squeeze_layers(se)
        if squeeze is None:
            return None
    groups = _conv_norm_groups(shortcut)
    if groups is None or len(groups) not in (0, 2) \
            or any(norm.activation != "identity" for _, norm in groups):
        return None
    shortcut = None if not groups else (_ConvolutionStage(*groups[0]), groups[1][0], groups[1][1])
    return FusedGhostBottleneck(ghost1, attention, depthwise, squeeze, ghost2, shortcut, concatenate)
