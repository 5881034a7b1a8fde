"""Bottleneck blocks beyond MobileNetV3's: timm's ReXNet LinearBottleneck matched as
FusedLinearBottleneck, timm's StarNet Block as FusedStarBlock, timm's VoVNet OsaBlock with a
hard-sigmoid eSE as FusedOsaBlock."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.compiler import is_compiling as _is_compiling

from .. import _C
from ..functional import (bias_activation_product, concatenate_channels, hardsigmoid, hardsigmoid_gate, hardswish,
                          hardtanh, relu6, residual_activation, scale_shift_activation, scale_shift_activation_mean,
                          scale_shift_residual_activation)
from ..modules import BatchNormActivation, HardSigmoidEffectiveSqueezeExcitation
from .fused_block import FusedInvertedResidual, _one_call_convolution
from .matching import (_children, _depthwise_filter, _foldable, _folded_norm, _fused_activation,
                       _hard_sigmoid_squeeze_excitation, _is_timm_batchnorm_act, _matrix_conv, _package)
from .timm_blocks import _inactive_in_eval

__all__ = ["FusedLinearBottleneck", "FusedStarBlock", "FusedOsaBlock"]

# ReXNet's block rewritten module by module keeps, besides its convolutions, the depthwise
# BatchNorm's pass, the ReLU6's, the squeeze's mean (reading the depthwise output again), the sigmoid
# gate's multiply, the projection's BatchNorm, the partial residual add and torch.cat's copy of the
# whole output. Seen whole: the ReLU6 is the depthwise BatchNorm's epilogue (one kernel with the
# convolution where the depthwise stage applies), the mean is written by that pass, the gate's
# multiply and the ReLU6 are one scale_shift_activation, and the residual is added in place into the
# projection's output, where torch.cat copied it.


class FusedLinearBottleneck(nn.Module):
    """An inference ReXNet block (timm's LinearBottleneck) with the passes between its convolutions
    fused:

        y = norm1(conv1(x))                               the block's own ConvNormAct, if any: norm1 its
                                                          BatchNorm folded with its SiLU, one pass
        y = norm2(conv2(y))                               norm2: the depthwise BatchNorm with act_dw (ReLU6)
                                                          as its epilogue; one kernel where the depthwise
                                                          stage applies (FusedInvertedResidual's)
      or, with squeeze-excitation:
        y, m = norm2(conv2(y)), mean of y per (n, c)      norm2 without activation, the mean in the same pass
        g = sigmoid(fc2(se_norm(fc1(m))))                 matrix products on the (N, C) mean; se_norm the
                                                          squeeze's BatchNorm with its ReLU
        y = act_dw(y * g)                                 one pass (_C._gated_activation, g per (n, c))
        out = norm3(conv3(y)), out[:, :in] += x           where use_shortcut: in place (one
                                                          scale_shift_residual_activation where the
                                                          channels match), no torch.cat copy

    norm1, norm2, norm3 and se_norm are the block's BatchNorms folded (BatchNormActivation). The
    convolutions, the expansion and the squeeze's 1x1 convolutions are the block's modules (shared).
    Where a gradient is wanted or under torch.compile, the block's
    own differentiable forms run (the expansion whole, the convolutions, the gate's multiply then
    act_dw, torch.cat for the residual).

    Against the original block the results differ by rounding only: the BatchNorms are folded as
    BatchNormActivation's are (the expansion's SiLU with PyTorch's formula, in float), the
    mean sums in float32 in its own order, the matrix products sum in
    another order than cuDNN's 1x1 convolutions, and the one-kernel depthwise stage does not round the
    convolution's output before its BatchNorm in float16/bfloat16. The gate's multiply and act_dw in
    one pass round as eager does (a clamp to representable bounds commutes with rounding). Made by
    fuse_blocks, for inference; differentiable, with the BatchNorms frozen."""

    # The one-kernel depthwise stage and its cached filters, as FusedInvertedResidual runs them (they
    # read conv2, norm2, depthwise_filter and the cache below).
    depthwise_parameters = FusedInvertedResidual.depthwise_parameters
    depthwise_stage = FusedInvertedResidual.depthwise_stage

    def __init__(self, expansion: nn.Module | None, depthwise: tuple[nn.Module, BatchNormActivation],
                 squeeze: tuple[nn.Module, nn.Module, nn.Module, nn.Module] | None, activation: nn.Module,
                 projection: tuple[nn.Module, BatchNormActivation], shortcut_channels: int | None):
        super().__init__()
        self.expansion = expansion
        # The expansion's BatchNorm folded with its SiLU (norm1), where the expansion has that form.
        layers = None if expansion is None else _silu_conv_norm(expansion)
        self.norm1 = None if layers is None else layers[1]
        self.conv2, self.norm2 = depthwise
        self.se_reduce, self.se_norm, self.se_expand, self.se_gate = squeeze if squeeze is not None else (None,) * 4
        self.conv3, self.norm3 = projection
        self.shortcut_channels = shortcut_channels
        # act_dw as (name, min_val, max_val), not a module: it runs inside the fused passes, and
        # replace_activations has nothing left to swap.
        self.activation = _fused_activation(activation)
        self.depthwise_filter = _depthwise_filter(self.conv2)
        self._depthwise_cache: list = [None, None, None, None]  # depthwise_parameters' (FusedInvertedResidual's)
        self._transposed_cache: dict = {}  # _transposed_weight's: {name: (key, weight as (C_in, C_out))}

    def _transposed_weight(self, name: str, conv: nn.Module) -> torch.Tensor:
        """conv's weight as a contiguous (C_in, C_out) matrix, made again only when the weight changed
        (moved, cast, or modified in place)."""
        weight = conv.weight
        key = (weight.data_ptr(), weight._version, weight.dtype)
        cached = self.__dict__.setdefault("_transposed_cache", {}).get(name)
        if cached is None or cached[0] != key:
            with torch.no_grad():
                cached = key, weight.detach().flatten(1).t().contiguous()
            self._transposed_cache[name] = cached
        return cached[1]

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        """A 1x1 convolution (the submodule `name`) on (N, C) as its matrix product, for the fused
        forward (no gradient, not compiled): float32 CUDA in hardact's one cuBLASLt call, TF32 as
        cuDNN's setting (TUNING.md#package-fused-ops); other CUDA dtypes on the weight stored
        transposed, which cuBLAS runs 2.3-4 x as fast as F.linear's transposed view at a few samples
        and long rows (TUNING.md#package-fused-ops); else F.linear."""
        conv = getattr(self, name)
        weight = conv.weight.flatten(1)
        if x.is_cuda and x.dtype == torch.float32 and weight.dtype == torch.float32:
            return _C._linear_activation(x, weight, conv.bias, False, torch.backends.cudnn.allow_tf32)
        if x.is_cuda and x.dtype == weight.dtype and (conv.bias is None or conv.bias.dtype == x.dtype):
            transposed = self._transposed_weight(name, conv)
            return torch.mm(x, transposed) if conv.bias is None else torch.addmm(conv.bias, x, transposed)
        return F.linear(x, weight, conv.bias)

    def excitation(self, mean: torch.Tensor, fused: bool) -> torch.Tensor:
        """fc2(se_norm(fc1(mean))) on the (N, C) mean: the gate before its sigmoid, (N, C)."""
        if not fused:
            squeezed = mean.reshape(mean.shape[0], mean.shape[1], 1, 1)
            return self.se_expand(self.se_norm(self.se_reduce(squeezed))).flatten(1)
        return self._linear(self.se_norm(self._linear(mean, "se_reduce")), "se_expand")

    def gated_activation(self, y: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        """act_dw(y * gate[n, c]), gate (N, C) in y's dtype: one pass (_C._gated_activation) for a CUDA
        y, NCHW or channels-last; else the multiply and the activation as two ops."""
        if y.is_cuda and gate.dtype == y.dtype and (y.is_contiguous()
                                                    or y.is_contiguous(memory_format=torch.channels_last)):
            return _C._gated_activation(y, gate, *self.activation)
        return _activation(y * gate.reshape(*gate.shape, 1, 1), self.activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        fused = not (_is_compiling() or type(x) is not torch.Tensor
                     or (torch.is_grad_enabled() and any(p.requires_grad for p in (x, *self.parameters()))))
        if self.expansion is None:
            y = x
        elif fused and self.norm1 is not None:
            y = self.norm1(self.expansion.conv(x))
        else:
            y = self.expansion(x)
        norm = self.norm2
        if self.se_reduce is None:
            stage = self.depthwise_stage(y, False) if fused else None
            y = norm(self.conv2(y)) if stage is None else stage[0]
        else:
            stage = self.depthwise_stage(y, True) if fused else None
            if stage is None:
                y, mean = scale_shift_activation_mean(self.conv2(y), norm.scale, norm.shift, norm.activation,
                                                      norm.min_val, norm.max_val)
            else:
                y, mean = stage
            gate = self.se_gate(self.excitation(mean, fused))
            y = self.gated_activation(y, gate) if fused else _activation(y * gate.reshape(*gate.shape, 1, 1),
                                                                         self.activation)
        norm = self.norm3
        y = self.conv3(y)
        channels = self.shortcut_channels
        if channels is None:
            return norm(y)
        if channels == y.shape[1] and y.dtype == shortcut.dtype:
            return scale_shift_residual_activation(y, norm.scale, norm.shift, shortcut)
        y = norm(y)
        if not fused or y.dtype != shortcut.dtype:  # the block's add would promote (autocast)
            return torch.cat([y[:, :channels] + shortcut, y[:, channels:]], dim=1)
        y[:, :channels] += shortcut
        return y

    def extra_repr(self) -> str:
        squeeze = "none" if self.se_reduce is None else "sigmoid-gated, matrix products"
        return (f"squeeze_excitation={squeeze}, activation={self.activation[0]}, "
                f"shortcut_channels={self.shortcut_channels}")


class FusedStarBlock(nn.Module):
    """An inference StarNet block (timm's starnet.Block) with each convolution's bias added in the pass
    that follows it, where PyTorch adds it in a pass of its own (ATen runs cuDNN's convolution without
    bias, then adds it with add_), and the first BatchNorm folded into the convolutions around it:

        y = conv1(x) with norm1's scale in its filter
                                     the depthwise 7x7 convolution: norm1 = (z + b) * scale + shift is
                                     linear, so its scale multiplies the filter and its shift (with
                                     the bias), carried through the 1x1 convolutions f1 and f2 (no
                                     padding), joins their biases: f(y + t) = f(y) + W t
        a = act(f1(y) + b1') * (f2(y) + b2')
                                     the star product: f1 and f2 without their biases, both biases
                                     (with W t), the activation and the product in one
                                     bias_activation_product
        z = norm_g(conv_g(a))        g's convolution without its bias, folded into its BatchNorm
        out = conv2(z) + b2 + x      dwconv2 without its bias: the bias and the residual add in one
                                     scale_shift_residual_activation (a scale of ones)

    The convolutions are the block's modules (shared); the folded shifts (shift + bias * scale,
    computed in float64 once, frozen like BatchNormActivation's) are buffers; the scaled filter and
    the star product's biases are made in float64 again whenever a convolution's weight or bias
    changed (folded_parameters). No pass is added: each bias is either ATen's own pass, now merged,
    or inside the convolution's kernel, now in the next pass; norm1's pass is gone, and the star
    product is one pass where eager makes four (f1's and f2's bias adds, the activation, the
    multiply). For a CUDA torch.Tensor where no gradient is wanted, not under torch.compile, autocast,
    torch.jit.trace or a __torch_function__ mode, with convolutions of the plain types (nn.Conv2d,
    PointwiseConv2d), that sequence is one call into C++ (_C._fused_star_block_forward): the same
    kernels in the same order, the same bits, without eight calls' host time from Python. Where a
    gradient is wanted or under torch.compile, the block's own forms run (the convolutions with their
    biases, then the BatchNorms). Against the original block
    the results differ by rounding only: the BatchNorms are folded as BatchNormActivation's are, with
    the bias, and norm1 into the filter and the star product's biases (rounded to their dtype); in
    float32 the star product and dwconv2 passes round as the original's ops do (each sum rounded,
    then the activation, the product or + x rounded). Made by fuse_blocks, for inference;
    differentiable, with the BatchNorms frozen."""

    def __init__(self, depthwise: tuple[nn.Conv2d, BatchNormActivation], f1: nn.Conv2d, f2: nn.Conv2d,
                 activation: nn.Module, gate: tuple[nn.Conv2d, BatchNormActivation], depthwise2: nn.Conv2d):
        super().__init__()
        self.conv1, self.norm1 = depthwise
        self.f1, self.f2 = f1, f2
        self.activation = _fused_activation(activation)  # (name, min_val, max_val), as FusedLinearBottleneck's
        self.conv_g, self.norm_g = gate
        self.conv2 = depthwise2
        self.register_buffer("shift1", _bias_folded(self.norm1, self.conv1.bias))
        self.register_buffer("shift_g", _bias_folded(self.norm_g, self.conv_g.bias))
        self.register_buffer("ones", torch.ones_like(self.norm1.scale, memory_format=torch.contiguous_format))
        self._folded_cache: list = [None, None, None, None]
        # The one-call forward's plan (_one_call_arguments), made again when a submodule is replaced;
        # _one_call False runs the Python forward always (the tests' way to compare the two).
        self._one_call_plan: tuple | None = None
        self._one_call = True

    def __setstate__(self, state: dict) -> None:
        # A block pickled before the one-call forward existed: its plan, empty (made on use).
        super().__setstate__(state)
        self.__dict__.setdefault("_one_call_plan", None)
        self.__dict__.setdefault("_one_call", True)

    def folded_parameters(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """conv1's filter times norm1's scale, and f1's and f2's biases with norm1's shift carried
        through them (b + W shift), in float64 then each in its weight's dtype; made again only when
        a convolution's weight or bias changed (moved, cast, or modified in place)."""
        tensors = (self.conv1.weight, self.f1.weight, self.f1.bias, self.f2.weight, self.f2.bias)
        key = tuple((t.data_ptr(), t._version) if t is not None else None for t in tensors)
        cache = self._folded_cache
        if key != cache[0]:
            with torch.no_grad():
                weight = self.conv1.weight.detach()
                scale, shift = self.norm1.scale.double(), self.shift1.double()
                cache[1] = (weight.double() * scale.view(-1, *[1] * (weight.dim() - 1))).to(weight.dtype)
                for i, conv in ((2, self.f1), (3, self.f2)):
                    matrix = conv.weight.detach().double().flatten(1)
                    bias = matrix @ shift
                    if conv.bias is not None:
                        bias = bias + conv.bias.detach().double()
                    cache[i] = bias.to(conv.weight.dtype)
            cache[0] = key
        return cache[1], cache[2], cache[3]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _is_compiling() or type(x) is not torch.Tensor \
                or (torch.is_grad_enabled() and any(p.requires_grad for p in (x, *self.parameters()))):
            y = self.norm1(self.conv1(x))
            a = _activation(self.f1(y), self.activation) * self.f2(y)
            return x + self.conv2(self.norm_g(self.conv_g(a)))
        if self._one_call:
            arguments = self._one_call_arguments()
            if arguments is not None:
                out = _C._fused_star_block_forward(x, *arguments)
                if out is not None:
                    return out
        filter1, bias1, bias2 = self.folded_parameters()
        y = self.conv1._conv_forward(x, filter1, None)
        a = bias_activation_product(self.f1._conv_forward(y, self.f1.weight, None), bias1,
                                    self.f2._conv_forward(y, self.f2.weight, None), bias2, *self.activation)
        z = scale_shift_activation(self.conv_g._conv_forward(a, self.conv_g.weight, None), self.norm_g.scale,
                                   self.shift_g)
        bias = self.conv2.bias
        z = self.conv2._conv_forward(z, self.conv2.weight, None)
        if z.shape != x.shape or z.dtype != x.dtype:  # the block's add would broadcast or promote (autocast)
            return x + (z if bias is None else z + bias.view(-1, 1, 1))
        if bias is None:
            return residual_activation(z, x)
        return scale_shift_residual_activation(z, self.residual_scale(bias), bias, x)

    def _one_call_arguments(self) -> tuple | None:
        """The arguments after x of _C._fused_star_block_forward, the inference branch of forward in one
        C++ call (the same operators in the same order, the same bits, without the host time of eight
        calls from Python): the tensors gathered per call, the convolutions' settings (read once per
        set of submodules, _one_call_convolution) and the activation; None where a convolution is one
        the call cannot stand in for, or torch.jit traces. The branch calls no module, so hooks are
        run by neither form."""
        modules = tuple(self._modules.values())
        plan = self._one_call_plan
        if plan is None or plan[0] != modules:  # a submodule replaced (nn.Module has identity equality)
            settings = tuple(_one_call_convolution(conv)
                             for conv in (self.conv1, self.f1, self.f2, self.conv_g, self.conv2))
            plan = self._one_call_plan = (modules, None if None in settings else settings)
        if plan[1] is None or torch._C._get_tracing_state():
            return None
        filter1, bias1, bias2 = self.folded_parameters()
        bias = self.conv2.bias
        tensors = [filter1, self.f1.weight, bias1, self.f2.weight, bias2, self.conv_g.weight, self.norm_g.scale,
                   self.shift_g, self.conv2.weight, bias, None if bias is None else self.residual_scale(bias)]
        return tensors, plan[1], self.activation

    def residual_scale(self, bias: torch.Tensor) -> torch.Tensor:
        """The residual pass's scale of ones, in the bias's dtype: the pass reads a float16/bfloat16
        bias as it is only with a scale of its dtype, and otherwise converts it to float32 in a copy
        of its own every call (a model cast before the rewrite keeps the folded norm's float32 scale,
        which `ones` copies). Ones times z is z in either dtype, so the bits are the same."""
        ones = self.ones
        if ones.dtype == bias.dtype and ones.device == bias.device:
            return ones
        cached = self.__dict__.get("_residual_ones")
        if cached is None or cached.dtype != bias.dtype or cached.device != bias.device:
            cached = self._residual_ones = torch.ones_like(ones, dtype=bias.dtype, device=bias.device)
        return cached

    def extra_repr(self) -> str:
        return f"activation={self.activation[0]}, biases in the passes after the convolutions, norm1 folded"


class FusedOsaBlock(nn.Module):
    """An inference VoVNet block (timm's OsaBlock) whose effective squeeze-excitation (eSE) is gated
    by a hard sigmoid, with the squeeze's mean made by the pass that writes the block's output, where
    eager reads that output again in a reduction of its own (ATen's mean over H and W), and the mid
    layers' outputs concatenated by one hardact copy:

        x0 = x; x = reduction(x)                      the block's own modules (their BatchNorms folded by
        x1 = mid[0](x), x2 = mid[1](x1), ...          fuse_batchnorm_activation), run as timm's
        x = cat(x0, x1, ..., xk)                      SequentialAppendList runs them; the concatenation
                                                      concatenate_channels (torch.cat's bits)
        y, m = norm(conv(x)), mean of y per (n, c)    the aggregation's convolution without its bias, its
                                                      BatchNorm, bias and activation folded, the mean in
                                                      the same pass (scale_shift_activation_mean)
        y = hardsigmoid_gate(y, fc(m))                the eSE's gate (HardSigmoidEffectiveSqueezeExcitation's)
        out = y + x0                                  where the block is residual: one residual_activation pass

    The convolutions, the mid layers (conv_mid, whose own forward is not called) and the eSE's
    convolution are the block's modules (shared); the folded shift (shift + bias * scale, in float64
    once, frozen like BatchNormActivation's) is a buffer. Differentiable, with the BatchNorms frozen:
    the fused ops have their backward, and under torch.compile their torch forms (torch.cat too).
    Against the original block the results differ by rounding only: the BatchNorm is folded as
    BatchNormActivation's is, and the mean sums the pass's output in float in another order than
    ATen's. Made by fuse_blocks, for inference."""

    def __init__(self, reduction: nn.Module | None, mid: nn.Module, aggregation: tuple[nn.Conv2d, BatchNormActivation],
                 attention: HardSigmoidEffectiveSqueezeExcitation, residual: bool):
        super().__init__()
        self.conv_reduction = reduction
        self.conv_mid = mid
        self.conv_concat, self.norm_concat = aggregation
        self.attn = attention
        self.residual = residual
        self.register_buffer("shift", _bias_folded(self.norm_concat, self.conv_concat.bias))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output = [x]
        if self.conv_reduction is not None:
            x = self.conv_reduction(x)
        # SequentialAppendList's forward, each layer on the last output, with its torch.cat as one hardact copy.
        for layer in self.conv_mid:
            x = layer(x)
            output.append(x)
        x = concatenate_channels(output)
        conv, norm = self.conv_concat, self.norm_concat
        y, mean = scale_shift_activation_mean(conv._conv_forward(x, conv.weight, None), norm.scale, self.shift,
                                              norm.activation, norm.min_val, norm.max_val)
        y = hardsigmoid_gate(y, self.attn.gate(mean))
        if not self.residual:
            return y
        shortcut = output[0]
        if y.shape != shortcut.shape or y.dtype != shortcut.dtype:  # the add would broadcast or promote
            return y + shortcut
        return residual_activation(y, shortcut)

    def extra_repr(self) -> str:
        return f"residual={self.residual}, the eSE's mean in the aggregation's BatchNorm pass"


def _bias_folded(norm: BatchNormActivation, bias: torch.Tensor | None) -> torch.Tensor:
    """norm's shift with a bias added before it folded in: shift + bias * scale (computed in float64)."""
    with torch.no_grad():
        if bias is None:
            return norm.shift.detach().clone()
        return (norm.shift.double() + bias.detach().double() * norm.scale.double()).to(norm.shift.dtype)


def _activation(y: torch.Tensor, spec: tuple[str, float, float]) -> torch.Tensor:
    """The activation (name, min_val, max_val) of matching._fused_activation, hardact's (PyTorch's bits)."""
    name, min_val, max_val = spec
    if name == "identity":
        return y
    if name == "hardtanh":
        return hardtanh(y, min_val, max_val)
    if name == "relu":
        return F.relu(y)
    return {"relu6": relu6, "hardswish": hardswish, "hardsigmoid": hardsigmoid}[name](y)


def _norm_with(norm: nn.Module, activation: nn.Module | None) -> BatchNormActivation | None:
    """A BatchNorm with no activation of its own (nn.BatchNorm2d, timm's BatchNormAct2d with an
    nn.Identity act, or one fuse_batchnorm_activation already folded without activation) folded with
    `activation` after it (None: none); else None."""
    folded = _folded_norm(norm)  # a BatchNormAct2d's own activation, if any, is folded in: refused below
    if folded is None or folded.activation != "identity":
        return None
    spec = ("identity", -1.0, 1.0) if activation is None else _fused_activation(activation)
    if spec is None:
        return None
    return BatchNormActivation(folded.scale, folded.shift, *spec)


def _conv_norm(layer: nn.Module, activation: nn.Module | None = None) -> tuple[nn.Conv2d, BatchNormActivation] | None:
    """(convolution, folded BatchNorm with `activation`) of timm's ConvNormAct built without activation
    (its forward: conv, bn, then aa where set: here none); else None."""
    if type(layer).__name__ != "ConvNormAct" or _package(layer) != "timm" or _children(layer) != {"conv", "bn"} \
            or getattr(layer, "aa", None) is not None or type(layer.conv) is not nn.Conv2d:
        return None
    norm = _norm_with(layer.bn, activation)
    return None if norm is None else (layer.conv, norm)


def _silu_conv_norm(layer: nn.Module) -> tuple[nn.Conv2d, BatchNormActivation] | None:
    """(convolution, its BatchNorm folded with SiLU) of timm's ConvNormAct whose BatchNorm (a
    BatchNormAct2d with running statistics, no drop) applies nn.SiLU (its forward: conv, bn with its
    act; aa unset); else None."""
    if type(layer).__name__ != "ConvNormAct" or _package(layer) != "timm" or _children(layer) != {"conv", "bn"} \
            or getattr(layer, "aa", None) is not None or type(layer.conv) is not nn.Conv2d:
        return None
    bn = layer.bn
    if not (_is_timm_batchnorm_act(bn) and _foldable(bn) and type(bn.act) is nn.SiLU
            and type(bn.drop) is nn.Identity and layer.conv.out_channels == bn.num_features):
        return None
    return layer.conv, BatchNormActivation.from_batchnorm(bn, "silu").to(bn.running_mean.device)


def _sigmoid(module: nn.Module) -> bool:
    """nn.Sigmoid or timm's Sigmoid (x.sigmoid()): torch.sigmoid."""
    return type(module) is nn.Sigmoid or (type(module).__name__ == "Sigmoid"
                                          and type(module).__module__ == "timm.layers.activations")


def _rexnet_squeeze(se: nn.Module) -> tuple[nn.Module, nn.Module, nn.Module, nn.Module] | None:
    """(fc1, bn with act folded, fc2, gate) of timm's SEModule (timm.layers.squeeze_excite) gated by a
    sigmoid, whose forward is x * gate(fc2(act(bn(fc1(x.mean((2, 3), keepdim=True)))))) without
    add_maxpool; else None."""
    if type(se).__name__ != "SEModule" or type(se).__module__ != "timm.layers.squeeze_excite" \
            or _children(se) != {"fc1", "bn", "act", "fc2", "gate"} or getattr(se, "add_maxpool", None) is not False \
            or not (_matrix_conv(se.fc1) and _matrix_conv(se.fc2) and _sigmoid(se.gate)):
        return None
    norm = _norm_with(se.bn, se.act)
    return None if norm is None else (se.fc1, norm, se.fc2, se.gate)


def _rexnet_block(block: nn.Module) -> FusedLinearBottleneck | None:
    """timm's ReXNet LinearBottleneck (timm.models.rexnet) as a FusedLinearBottleneck, or None. Its
    forward, timm 0.9 to 1.0: shortcut = x; conv_exp (a ConvNormAct, or None); conv_dw (a depthwise
    ConvNormAct without activation); se (an SEModule, or None); act_dw; conv_pwl (a ConvNormAct
    without activation); then where use_shortcut, drop_path (None or the identity in eval) and
    torch.cat([x[:, :in_channels] + shortcut, x[:, in_channels:]], dim=1)."""
    if type(block).__name__ != "LinearBottleneck" or type(block).__module__ != "timm.models.rexnet" \
            or not isinstance(getattr(block, "use_shortcut", None), bool) \
            or not isinstance(getattr(block, "in_channels", None), int):
        return None
    names = {"conv_dw", "act_dw", "conv_pwl"} | {name for name in ("conv_exp", "se", "drop_path")
                                                  if getattr(block, name, None) is not None}
    if _children(block) != names or (block.drop_path is not None and not _inactive_in_eval(block.drop_path)):
        return None
    if _fused_activation(block.act_dw) is None:
        return None
    squeeze = None if block.se is None else _rexnet_squeeze(block.se)
    if block.se is not None and squeeze is None:
        return None
    # Without squeeze-excitation act_dw follows the depthwise BatchNorm directly: its epilogue.
    depthwise = _conv_norm(block.conv_dw, block.act_dw if squeeze is None else None)
    projection = _conv_norm(block.conv_pwl)
    if depthwise is None or projection is None or depthwise[0].groups != depthwise[0].in_channels:
        return None
    channels = block.in_channels if block.use_shortcut else None
    if channels is not None and channels > projection[0].out_channels:
        return None
    return FusedLinearBottleneck(block.conv_exp, depthwise, squeeze, block.act_dw, projection, channels)


def _starnet_conv(layer: nn.Module, with_norm: bool) -> tuple[nn.Conv2d, BatchNormActivation | None] | None:
    """(convolution, its BatchNorm folded, or None) of StarNet's ConvBN (an nn.Sequential: conv, then
    bn where built with one), holding a BatchNorm exactly when with_norm; else None."""
    if type(layer).__name__ != "ConvBN" or type(layer).__module__ != "timm.models.starnet" \
            or not isinstance(layer, nn.Sequential) \
            or list(layer._modules) != (["conv", "bn"] if with_norm else ["conv"]) \
            or type(layer.conv) is not nn.Conv2d:
        return None
    if not with_norm:
        return layer.conv, None
    norm = _norm_with(layer.bn, None)
    return None if norm is None else (layer.conv, norm)


def _starnet_block(block: nn.Module) -> FusedStarBlock | None:
    """timm's StarNet Block (timm.models.starnet) as a FusedStarBlock, or None. Its forward, timm 1.0:
    x = dwconv(x) (ConvBN: convolution, BatchNorm); x = act(f1(x)) * f2(x) (ConvBNs without
    BatchNorm); x = dwconv2(g(x)) (g with a BatchNorm, dwconv2 without); then residual + drop_path(x)
    (the identity in eval)."""
    if type(block).__name__ != "Block" or type(block).__module__ != "timm.models.starnet" \
            or _children(block) != {"dwconv", "f1", "f2", "g", "dwconv2", "act", "drop_path"} \
            or not _inactive_in_eval(block.drop_path) or _fused_activation(block.act) is None:
        return None
    stages = [_starnet_conv(block.dwconv, True), _starnet_conv(block.f1, False), _starnet_conv(block.f2, False),
              _starnet_conv(block.g, True), _starnet_conv(block.dwconv2, False)]
    if any(stage is None for stage in stages) or stages[1][0].out_channels != stages[2][0].out_channels \
            or not (_matrix_conv(stages[1][0]) and _matrix_conv(stages[2][0])):  # norm1's shift passes through them
        return None
    return FusedStarBlock(stages[0], stages[1][0], stages[2][0], block.act, stages[3], stages[4][0])


def _osa_block(block: nn.Module) -> FusedOsaBlock | None:
    """timm's VoVNet OsaBlock (timm.models.vovnet) with an effective squeeze-excitation gated by a hard
    sigmoid as a FusedOsaBlock, or None (without attn nothing is gained over the module-level
    rewrites). Its forward, timm 0.9 to 1.0: output = [x]; conv_reduction (or None); conv_mid, a
    SequentialAppendList (each layer's output appended, then torch.cat of the list); conv_concat (a
    ConvNormAct: convolution, BatchNorm with its activation); attn; drop_path (None or the identity in
    eval); then x + output[0] where residual."""
    if type(block).__name__ != "OsaBlock" or type(block).__module__ != "timm.models.vovnet" \
            or not isinstance(getattr(block, "residual", None), bool):
        return None
    names = {"conv_mid", "conv_concat", "attn"} | {name for name in ("conv_reduction", "drop_path")
                                                  if getattr(block, name, None) is not None}
    if _children(block) != names or (block.drop_path is not None and not _inactive_in_eval(block.drop_path)):
        return None
    mid = block.conv_mid
    if type(mid).__name__ != "SequentialAppendList" or type(mid).__module__ != "timm.models.vovnet":
        return None
    attention = block.attn
    if type(attention) is not HardSigmoidEffectiveSqueezeExcitation:
        attention = _hard_sigmoid_squeeze_excitation(attention)
        if type(attention) is not HardSigmoidEffectiveSqueezeExcitation:
            return None
    layer = block.conv_concat
    if type(layer).__name__ != "ConvNormAct" or _package(layer) != "timm" or _children(layer) != {"conv", "bn"} \
            or getattr(layer, "aa", None) is not None or type(layer.conv) is not nn.Conv2d:
        return None
    norm = _folded_norm(layer.bn)  # timm's BatchNormAct2d with its activation, or one already folded
    if norm is None:
        return None
    return FusedOsaBlock(block.conv_reduction, mid, (layer.conv, norm), attention, block.residual)


def _bottleneck_block(block: nn.Module) -> nn.Module | None:
    """The fused module for a bottleneck block this file knows (by class name and module), or None."""
    if type(block).__name__ == "LinearBottleneck":
        return _rexnet_block(block)
    if type(block).__name__ == "Block":
        return _starnet_block(block)
    if type(block).__name__ == "OsaBlock":
        return _osa_block(block)
    return None
