"""Tests of the fused blocks' one-call forwards, FusedInvertedResidual's
(_C._fused_inverted_residual_forward) and FusedStarBlock's (_C._fused_star_block_forward): a whole
block's inference forward in C++, which must run the Python forward's kernels and give its bits.

    pytest pytorch/tests/test_fused_block_forward.py       # the tests marked cuda skip without a GPU

The Python forward is forced by the block's private switch `_one_call = False` (forward then runs
forward_modules); the calls that took the one call are counted by wrapping the binding
(one_call_counter).

Without a GPU: the binding declines (returns None) a CPU or meta x and a tensor subclass, and raises
TypeError for malformed arguments; a block on the meta device, with or without gradients, runs the
Python forward (its shapes, and a gradient); torch.compile(fullgraph=True) traces the Python forward
(the binding cannot be traced: a call to it would break the graph); the plan refuses a convolution
subclass, a non-ReLU squeeze activation and a forward replaced on an instance; a hook on a
submodule, or a global one, turns the one call off.
With a GPU: timm's mobilenetv3_small_100 and lcnet_050 and torchvision's mobilenet_v3_small,
rewritten by optimize_for_inference, float32 and bfloat16, channels-last and channels-first, batch 1
and 3, odd sizes: every block's output from the one call equals the Python forward's bit for bit
(strides too), as does the network's, and every block took the one call; a gradient wanted, autocast
or a hook on a submodule runs the Python forward; the depthwise stage's float32 forms are made by
the one call where none are current (after .to(), after an in-place change of the filter), with the
Python forward's bits.

FusedStarBlock, the same way: without a GPU, the binding's refusals and declines, the plan's
refusals (a convolution subclass, an instance's _conv_forward), the meta device and torch.compile
taking the Python forward, and the residual pass's scale in the bias's dtype; with a GPU, timm's
starnet_s050, rewritten then cast and cast then rewritten, float32, bfloat16 and float16, with and
without replace_pointwise_convolutions, both layouts, batch 1 and 3 at odd sizes: every block's
output and the network's bit for bit the Python forward's, every block taking the one call, and
the residual scale's bits those of the float32 scale it replaces; a gradient wanted and autocast
run the Python forward.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import hardact_torch as ha
from checklib import NAMES, mismatch_report, raises
from hardact_torch import _C
from hardact_torch.rewrite import fused_block

SEED = 53

# The networks of the bit-for-bit comparison (library, name).
MODELS = [("timm", "mobilenetv3_small_100"), ("timm", "lcnet_050"), ("torchvision", "mobilenet_v3_small")]
# (batch, height, width) of the network inputs: batch 1 and 3, odd sizes.
INPUTS = [(1, 97, 83), (3, 65, 71)]


def counted(monkeypatch, name: str) -> dict[str, int]:
    """Wraps the binding _C.<name>: counts["taken"] and counts["declined"] count its calls by result."""
    counts = {"taken": 0, "declined": 0}
    binding = getattr(_C, name)

    def counting(*args):
        out = binding(*args)
        counts["declined" if out is None else "taken"] += 1
        return out

    monkeypatch.setattr(_C, name, counting)
    return counts


@pytest.fixture
def one_call_counter(monkeypatch):
    return counted(monkeypatch, "_fused_inverted_residual_forward")


@pytest.fixture
def star_call_counter(monkeypatch):
    return counted(monkeypatch, "_fused_star_block_forward")


def blocks_of(model: nn.Module, kind: type = ha.FusedInvertedResidual) -> list[nn.Module]:
    return [m for m in model.modules() if type(m) is kind]


def set_one_call(model: nn.Module, on: bool, kind: type = ha.FusedInvertedResidual) -> None:
    for block in blocks_of(model, kind):
        block._one_call = on


def rewritten(library: str, name: str) -> nn.Module:
    from test_fused_blocks import build  # a random network with gentle BatchNorms; skips without its library
    model = build(library, name)
    ha.optimize_for_inference(model)
    return model


def small_block(device: str = "cpu", squeeze_activation: nn.Module | None = None) -> ha.FusedInvertedResidual:
    """An expansion, a 3x3 depthwise stage, a squeeze-excitation and a projection with a skip."""
    c, hidden, cr = 16, 32, 8

    def norm(channels, activation):
        return ha.BatchNormActivation(torch.rand(channels) + 0.5, torch.randn(channels) * 0.1, activation)

    block = ha.FusedInvertedResidual(
        (nn.Conv2d(c, hidden, 1, bias=False), norm(hidden, "hardswish")),
        (nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False), norm(hidden, "hardswish")),
        (nn.Conv2d(hidden, cr, 1), squeeze_activation or nn.ReLU(), nn.Conv2d(cr, hidden, 1)),
        (nn.Conv2d(hidden, c, 1, bias=False), norm(c, "identity")), True)
    return block.eval().to(device)


# ---- no GPU --------------------------------------------------------------------------------------

def test_binding_declines_and_refuses(checks) -> None:
    """None (the Python forward runs) for a CPU or meta x, a tensor subclass and an x that is not a
    tensor; TypeError for arguments of the wrong kind or number."""
    block = small_block()
    arguments = block._one_call_arguments()
    checks.record("" if arguments is not None else "no arguments", "the plan applies to a plain block")
    call = _C._fused_inverted_residual_forward
    for device in ("cpu", "meta"):
        x = torch.randn(1, 16, 9, 9, device=device)
        checks.record("" if call(x, *small_block(device)._one_call_arguments()) is None else "a result",
                      f"binding: declines an x on {device}")
    subclass = torch.randn(1, 16, 9, 9).as_subclass(type("Sub", (torch.Tensor,), {}))
    checks.record("" if call(subclass, *block._one_call_arguments()) is None else "a result",
                  "binding: declines a tensor subclass")
    tensors, settings, depthwise, skip, cache = block._one_call_arguments()
    x = torch.randn(1, 16, 9, 9)
    checks.record(raises(TypeError, lambda: call(x, tensors, settings, depthwise, skip)), "binding: 5 arguments")
    checks.record("" if call("x", tensors, settings, depthwise, skip, cache) is None else "a result",
                  "binding: declines an x that is not a tensor (the Python forward raises its own error)")
    checks.record(raises(TypeError, lambda: call(x, tensors[:15], settings, depthwise, skip, cache)),
                  "binding: 15 tensors")
    checks.record(raises(TypeError, lambda: call(x, tensors, settings[:6], depthwise, skip, cache)),
                  "binding: 6 settings")
    checks.record(raises(TypeError, lambda: call(x, tuple(tensors), settings, depthwise, skip, cache)),
                  "binding: tensors not a list")


def test_meta_and_gradients_run_the_python_forward(checks, one_call_counter) -> None:
    """On the meta device the Python forward runs (fake kernels: the output's shape and layout), also
    with a gradient wanted, which reaches the input."""
    block = small_block("meta")
    x = torch.randn(2, 16, 11, 13, device="meta").contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        out = block(x)
    checks.record("" if out.shape == x.shape else f"shape {tuple(out.shape)}", "meta: the block's output shape")
    leaf = x.clone().requires_grad_()
    out = block(leaf)
    checks.record("" if out.grad_fn is not None else "no grad_fn", "meta, grad: a graph is recorded")
    out.sum().backward()
    checks.record("" if leaf.grad is not None and leaf.grad.shape == x.shape else "no gradient",
                  "meta, grad: the input's gradient")
    checks.record("" if one_call_counter["taken"] == 0 else f"{one_call_counter['taken']} taken",
                  "meta: the one call never taken")


def test_compile_traces_the_python_forward(checks) -> None:
    """torch.compile(fullgraph=True) traces forward_modules: the binding, which dynamo cannot trace,
    is never reached (it would break the graph, an error with fullgraph); the values are the
    functions' aten expressions on the CPU."""
    block = small_block()
    x = torch.randn(2, 16, 9, 9)
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(block, fullgraph=True, backend="aot_eager")(x)
    checks.record("" if out.shape == x.shape and torch.isfinite(out).all() else "bad output",
                  "compile: fullgraph trace of the Python forward")


def test_plan_refusals(checks) -> None:
    """The one call applies only to the modules whose forwards it knows, with no hook on them."""
    block = small_block()
    checks.record("" if block._one_call_arguments() is not None else "refused", "plan: the plain block")

    class Conv2dSubclass(nn.Conv2d):
        pass

    other = copy.deepcopy(block)
    subclass = Conv2dSubclass(16, 32, 1, bias=False)
    subclass.load_state_dict(other.conv1.state_dict())
    other.conv1 = subclass
    checks.record("" if other._one_call_arguments() is None else "taken", "plan: refuses an nn.Conv2d subclass")
    other = small_block(squeeze_activation=nn.Hardswish())
    checks.record("" if other._one_call_arguments() is None else "taken", "plan: refuses a non-ReLU squeeze")
    other = small_block()  # no plan made yet: a replaced forward is seen when the plan is made
    other.norm3.forward = lambda y: y
    checks.record("" if other._one_call_arguments() is None else "taken",
                  "plan: refuses a forward replaced on an instance")
    handle = block.conv3.register_forward_hook(lambda *args: None)
    checks.record("" if block._one_call_arguments() is None else "taken", "plan: off with a hook on conv3")
    handle.remove()
    checks.record("" if block._one_call_arguments() is not None else "refused", "plan: on again without it")
    handle = nn.modules.module.register_module_forward_pre_hook(lambda *args: None)
    try:
        checks.record("" if block._one_call_arguments() is None else "taken", "plan: off with a global hook")
    finally:
        handle.remove()
    block.se_activation = nn.ReLU(inplace=True)
    arguments = block._one_call_arguments()
    checks.record("" if arguments is not None and arguments[1][4] is True else f"{arguments}",
                  "plan: made again for a replaced module (the ReLU's inplace flag)")
    restored = copy.deepcopy(block)
    checks.record("" if restored._one_call_arguments()[0][0] is restored.conv1.weight else "stale",
                  "plan: a copy's arguments are the copy's tensors")


# ---- GPU -----------------------------------------------------------------------------------------

def block_inputs(model: nn.Module, x: torch.Tensor,
                 kind: type = ha.FusedInvertedResidual) -> list[tuple[nn.Module, torch.Tensor]]:
    """Every fused block with the input it receives in the Python forward (a forward pre-hook on the
    block itself, which does not touch the one-call decision, made on its submodules)."""
    seen = []
    handles = [block.register_forward_pre_hook(lambda module, args: seen.append((module, args[0])))
               for block in blocks_of(model, kind)]
    try:
        set_one_call(model, False, kind)
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
        set_one_call(model, True, kind)
    return seen


def compare_paths(checks, block: nn.Module, x: torch.Tensor, what: str) -> None:
    """The block's output through the one call and through the Python forward: the same bits and strides."""
    block._one_call = False
    python = block(x)
    block._one_call = True
    one_call = block(x)
    report = mismatch_report(one_call, python, x)
    if not report and one_call.stride() != python.stride():
        report = f"strides {one_call.stride()} against {python.stride()}"
    checks.record(report, what)


def record_autocast_declines(checks, binding, block: nn.Module, x: torch.Tensor, what: str) -> None:
    """Under CUDA autocast the block's one-call binding returns None (so the Python forward runs)."""
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        declined = binding(x, *block._one_call_arguments())
    checks.record("" if declined is None else "a result", what)


def compare_blocks_and_network(checks, model: nn.Module, x: torch.Tensor, kind: type, counter: dict,
                               what: str) -> None:
    """Every block of `kind` and the network, through the one call and through the Python forward (no
    gradient): the same bits; and every block took the one call (`counter` counts the binding's calls)."""
    with torch.no_grad():
        pairs = block_inputs(model, x, kind)
        checks.record("" if pairs else "no fused block", f"{what}: fused blocks")
        before = counter["taken"]
        for index, (block, block_x) in enumerate(pairs):
            compare_paths(checks, block, block_x, f"{what}: block {index}")
        taken = counter["taken"] - before
        checks.record("" if taken == len(pairs) else f"{taken} of {len(pairs)}",
                      f"{what}: every block took the one call")
        set_one_call(model, False, kind)
        python = model(x)
        set_one_call(model, True, kind)
        checks.record(mismatch_report(model(x), python), f"{what}: the network's output")


@pytest.mark.cuda
@pytest.mark.parametrize("library, name", MODELS)
def test_one_call_equals_python_forward(checks, generator, one_call_counter, library, name) -> None:
    """Each block, and the network, through the one call and through the Python forward: bit for bit
    in float32 (cuDNN's TF32 on, the default) and bfloat16, channels-last and channels-first, batch 1
    and 3 at odd sizes; every block took the one call."""
    base = rewritten(library, name).cuda()
    for dtype in (torch.float32, torch.bfloat16):
        for layout, memory_format in (("channels-last", torch.channels_last), ("NCHW", torch.contiguous_format)):
            model = copy.deepcopy(base).to(dtype=dtype, memory_format=memory_format)
            for batch, height, width in INPUTS:
                x = torch.randn(batch, 3, height, width, device="cuda", generator=generator).to(dtype).contiguous(
                    memory_format=memory_format)
                what = f"{name} {NAMES[dtype]} {layout} {(batch, height, width)}"
                compare_blocks_and_network(checks, model, x, ha.FusedInvertedResidual, one_call_counter, what)


@pytest.mark.cuda
def test_python_forward_where_it_must(checks, generator, one_call_counter) -> None:
    """A gradient wanted (grad mode with parameters or x requiring grad), autocast and a hook on a
    submodule run the Python forward; grad mode with nothing requiring grad takes the one call."""
    block = small_block("cuda")
    x = torch.randn(2, 16, 15, 13, device="cuda", generator=generator).contiguous(memory_format=torch.channels_last)
    out = block(x)  # grad mode, the parameters require grad
    checks.record("" if out.grad_fn is not None and one_call_counter["taken"] == 0 else "one call",
                  "grad mode, parameters requiring grad: the Python forward")
    frozen = copy.deepcopy(block).requires_grad_(False)
    out = frozen(x)
    checks.record("" if out.grad_fn is None and one_call_counter["taken"] == 1 else f"{one_call_counter}",
                  "grad mode, nothing requiring grad: the one call")
    out = frozen(x.clone().requires_grad_())
    checks.record("" if out.grad_fn is not None and one_call_counter["taken"] == 1 else f"{one_call_counter}",
                  "grad mode, x requiring grad: the Python forward")
    record_autocast_declines(checks, _C._fused_inverted_residual_forward, block, x,
                             "autocast: the binding declines (the Python forward)")
    with torch.no_grad():
        calls = []
        handle = block.conv1.register_forward_hook(lambda *args: calls.append(1))
        block(x)
        handle.remove()
        checks.record("" if calls and one_call_counter["taken"] == 1 else f"{one_call_counter}, hook calls {calls}",
                      "a hook on conv1: the Python forward, the hook runs")
        block(x)
        checks.record("" if one_call_counter["taken"] == 2 else f"{one_call_counter}", "no grad: the one call")


def python_made(checks, block: ha.FusedInvertedResidual, x: torch.Tensor, out: torch.Tensor, what: str) -> None:
    """out (the one call's, with the forms it made) against the Python forward with forms it makes itself."""
    block._depthwise_cache[0] = None
    block._one_call = False
    checks.record(mismatch_report(out, block(x), x), f"{what}: the Python forward's bits, its own forms")
    checks.record("" if block._depthwise_cache[0] is not None else "not made", f"{what}: the Python forward made them")
    block._one_call = True


@pytest.mark.cuda
def test_depthwise_forms_made_by_the_one_call(checks, generator) -> None:
    """Where the depthwise stage has no current float32 forms the one call makes them (and keeps
    them in the block's cache, where the Python forward finds them current): on first use and after
    an in-place change of the filter, with the bits of the Python forward making its own; after
    .to(bfloat16) the two paths agree."""
    block = small_block("cuda")
    x = torch.randn(3, 16, 17, 19, device="cuda", generator=generator).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        checks.record("" if block._depthwise_cache[0] is None else "filled", "cache: empty before use")
        out = block(x)
        checks.record("" if block._depthwise_cache[0] is not None else "empty", "cache: filled by the one call")
        cached = block._depthwise_cache[1:]
        checks.record("" if all(a is b for a, b in zip(cached, block.depthwise_parameters())) else "remade",
                      "cache: the Python forward finds it current")
        python_made(checks, block, x, out, "first use")
        block.to(torch.bfloat16)
        xb = x.to(torch.bfloat16)
        compare_paths(checks, block, xb, "after .to(bfloat16)")
        block.conv2.weight.mul_(0.5)
        key = block._depthwise_cache[0]
        out = block(xb)
        checks.record("" if block._depthwise_cache[0] != key else "not remade",
                      "cache: remade after an in-place change")
        python_made(checks, block, xb, out, "after an in-place change")


# ---- FusedStarBlock ------------------------------------------------------------------------------

def small_star_block(device: str = "cpu") -> ha.FusedStarBlock:
    """A StarNet block: 7x7 depthwise convolutions around the star product of two 1x1 convolutions
    (ReLU6), its gate's 1x1 convolution and BatchNorm; channels in multiples of 8 (the products)."""
    c, mlp = 16, 64

    def norm(channels):
        return ha.BatchNormActivation(torch.rand(channels) + 0.5, torch.randn(channels) * 0.1)

    block = ha.FusedStarBlock((nn.Conv2d(c, c, 7, padding=3, groups=c), norm(c)), nn.Conv2d(c, mlp, 1),
                              nn.Conv2d(c, mlp, 1), nn.ReLU6(), (nn.Conv2d(mlp, c, 1), norm(c)),
                              nn.Conv2d(c, c, 7, padding=3, groups=c))
    return block.eval().to(device)


def test_star_binding_declines_and_refuses(checks) -> None:
    """None (the Python forward runs) for a CPU or meta x and a tensor subclass; TypeError for
    arguments of the wrong kind or number, naming the binding (so too _pointwise_conv2d's)."""
    block = small_star_block()
    call = _C._fused_star_block_forward
    with torch.no_grad():
        arguments = block._one_call_arguments()
        checks.record("" if arguments is not None else "no arguments", "star plan: applies to a plain block")
        for device in ("cpu", "meta"):
            x = torch.randn(1, 16, 9, 9, device=device)
            checks.record("" if call(x, *small_star_block(device)._one_call_arguments()) is None else "a result",
                          f"star binding: declines an x on {device}")
        subclass = torch.randn(1, 16, 9, 9).as_subclass(type("Sub", (torch.Tensor,), {}))
        checks.record("" if call(subclass, *arguments) is None else "a result", "star binding: declines a subclass")
        tensors, settings, activation = arguments
        x = torch.randn(1, 16, 9, 9)
        checks.record(raises(TypeError, lambda: call(x, tensors, settings)), "star binding: 3 arguments")
        checks.record(raises(TypeError, lambda: call(x, tensors[:10], settings, activation)),
                      "star binding: 10 tensors")
        checks.record(raises(TypeError, lambda: call(x, tensors, settings[:4], activation)),
                      "star binding: 4 settings")
        checks.record(raises(TypeError, lambda: call(x, tensors, settings, activation[:2])),
                      "star binding: an activation of 2")
        checks.record(raises(TypeError, lambda: call(x, tensors[:10] + [None], settings, activation)),
                      "star binding: a bias without its residual scale")
        checks.record(raises(TypeError, lambda: call(x, [None] + tensors[1:], settings, activation)),
                      "star binding: no filter")
        try:
            _C._pointwise_conv2d(x, torch.randn(8, 16, 1, 1), None, (1,), (0, 0), (1, 1), 1)
            named = "no error"
        except TypeError as error:
            named = "" if "_pointwise_conv2d" in str(error) else f"the error names another binding: {error}"
        checks.record(named, "_pointwise_conv2d: a malformed stride raises a TypeError naming it")


def test_star_plan_refusals_meta_and_compile(checks, star_call_counter) -> None:
    """The plan refuses a convolution subclass and a _conv_forward replaced on the instance; on the
    meta device and under torch.compile the Python forward runs; the residual scale is the bias's
    dtype, kept."""

    class Conv2dSubclass(nn.Conv2d):
        pass

    block = small_star_block()
    other = copy.deepcopy(block)
    subclass = Conv2dSubclass(64, 16, 1)
    subclass.load_state_dict(other.conv_g.state_dict())
    other.conv_g = subclass
    checks.record("" if other._one_call_arguments() is None else "taken", "star plan: refuses an nn.Conv2d subclass")
    other = small_star_block()  # no plan made yet: a replaced _conv_forward is seen when the plan is made
    other.f2._conv_forward = lambda x, weight, bias: x
    checks.record("" if other._one_call_arguments() is None else "taken",
                  "star plan: refuses a _conv_forward replaced on an instance")
    ha.replace_pointwise_convolutions(block)
    arguments = block._one_call_arguments()
    checks.record("" if arguments is not None and [s[4] for s in arguments[1]] == [False, True, True, True, False]
                  else f"{arguments and arguments[1]}", "star plan: made again with the PointwiseConv2d flags")
    meta = small_star_block("meta")
    x = torch.randn(2, 16, 11, 13, device="meta").contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        out = meta(x)
    checks.record("" if out.shape == x.shape and star_call_counter["taken"] == 0 else f"{star_call_counter}",
                  "star, meta: the Python forward's shape")
    torch._dynamo.reset()
    x = torch.randn(2, 16, 9, 9)
    with torch.no_grad():
        out = torch.compile(block, fullgraph=True, backend="aot_eager")(x)
    checks.record("" if out.shape == x.shape and torch.isfinite(out).all() and star_call_counter["taken"] == 0
                  else "bad output", "star, compile: a fullgraph trace of the Python forward")
    half = small_star_block()
    half.conv2.to(torch.bfloat16)
    scale = half.residual_scale(half.conv2.bias)
    checks.record("" if scale.dtype == torch.bfloat16 and scale is half.residual_scale(half.conv2.bias)
                  and bool((scale == 1).all()) else f"{scale.dtype}", "residual scale: ones of the bias's dtype, kept")
    checks.record("" if block.residual_scale(block.conv2.bias) is block.ones else "a copy",
                  "residual scale: the buffer itself where the dtypes agree")


def star_models(dtype: torch.dtype) -> dict[str, nn.Module]:
    """starnet_s050 rewritten then cast to dtype, and cast then rewritten (its folded norms' scales
    stay float32, the benchmarks' order), channels-last, on the GPU."""
    from test_fused_blocks import build  # a random network with gentle BatchNorms; skips without its library
    base = build("timm", "starnet_s050").cuda()
    first = copy.deepcopy(base)
    ha.optimize_for_inference(first)
    second = copy.deepcopy(base).to(dtype)
    ha.optimize_for_inference(second)
    return {"rewritten then cast": first.to(dtype), "cast then rewritten": second}


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float16), ids=NAMES.get)
def test_star_one_call_equals_python_forward(checks, generator, star_call_counter, dtype) -> None:
    """Each StarNet block and the network through the one call and through the Python forward: bit
    for bit, with cuDNN's or the products' 1x1 convolutions, channels-last and channels-first, batch 1
    and 3 at odd sizes; every block took the one call; conv2 without a bias too; and the residual
    scale in the bias's dtype gives the bits of the float32 scale it replaces."""
    kind = ha.FusedStarBlock
    for order, built in star_models(dtype).items():
        for products in (False, True):
            model = copy.deepcopy(built)
            if products:
                ha.replace_pointwise_convolutions(model)
            for layout, memory_format in (("channels-last", torch.channels_last), ("NCHW", torch.contiguous_format)):
                model = model.to(memory_format=memory_format)
                for batch, height, width in INPUTS:
                    x = torch.randn(batch, 3, height, width, device="cuda", generator=generator).to(dtype).contiguous(
                        memory_format=memory_format)
                    what = (f"starnet_s050 {order} {NAMES[dtype]} {'products' if products else 'cuDNN'} {layout} "
                            f"{(batch, height, width)}")
                    compare_blocks_and_network(checks, model, x, kind, star_call_counter, what)
            block, block_x = block_inputs(model, x, kind)[-1]
            with torch.no_grad():
                out = block(block_x)
                block._one_call = False
                block.residual_scale = lambda bias, ones=block.ones: ones  # the scale as the block keeps it
                checks.record(mismatch_report(out, block(block_x)), f"{what}: the residual scale's dtype")
                del block.residual_scale
                block.conv2.bias = None
                python = block(block_x)
                block._one_call = True
                checks.record(mismatch_report(block(block_x), python), f"{what}: conv2 without a bias")


@pytest.mark.cuda
def test_star_python_forward_where_it_must(checks, generator, star_call_counter) -> None:
    """A gradient wanted runs the Python forward (the block's own forms); autocast makes the binding
    decline; no gradient takes the one call."""
    block = small_star_block("cuda")
    x = torch.randn(2, 16, 15, 13, device="cuda", generator=generator).contiguous(memory_format=torch.channels_last)
    out = block(x)
    checks.record("" if out.grad_fn is not None and star_call_counter["taken"] == 0 else f"{star_call_counter}",
                  "star, grad mode, parameters requiring grad: the Python forward")
    record_autocast_declines(checks, _C._fused_star_block_forward, block, x, "star, autocast: the binding declines")
    with torch.no_grad():
        block(x)
        checks.record("" if star_call_counter["taken"] == 1 else f"{star_call_counter}", "star, no grad: the one call")
