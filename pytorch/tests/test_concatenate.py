"""Tests of concatenate_channels: torch.cat(tensors, 1) whose channels-last CUDA inputs are copied by
hardact's concatenation (_C._concatenate_channels), torch.cat's bits and strides.

    pytest pytorch/tests/test_concatenate.py    # the tests marked cuda skip without a GPU

Without a GPU: on the CPU and the meta device, and under torch.compile, the function is torch.cat
(its result, strides and errors); the binding refuses what is not a list of tensors, an empty list,
a CPU tensor (naming torch.cat) and a meta tensor, each with its error type.
With a GPU: float32, float64, float16 and bfloat16 inputs of random bits (NaN payloads included), 2
to 6 of them and 17 (two launches), odd channel counts (narrow accesses), VoVNet's shapes, one
sample or a 1x1 image, an input off 16-byte alignment: the output is torch.cat's bit for bit with
its strides, through hardact's copy; the binding called directly returns an empty channels-last
tensor for N * H * W == 0 and refuses a channels-first input, mixed dtypes, an unsupported dtype and
other sizes; a channels-first input, a channel slice, a channels-first (N, 1, H, W), an input of no
channels, an empty batch, a gradient wanted, mixed dtypes and a CPU tensor among CUDA ones get
torch.cat's result or error; a CUDA graph replays eager's bits.
"""

from __future__ import annotations

from unittest import mock

import pytest
import torch

import hardact_torch as ha
import hardact_torch.functional as functional
from checklib import NAMES, mismatch_report, raises

SEED = 71
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# (N, H, W, channels of each input): VoVNet's stages (smaller batches), odd counts, two launches, a
# 1x1 image and a single row.
CASES = [(2, 56, 56, [64, 64, 64, 64]), (2, 28, 28, [112, 80, 80, 80]), (3, 14, 14, [256, 96, 96, 96]),
         (4, 7, 7, [384, 112, 112, 112]), (2, 9, 11, [3, 5]), (1, 5, 7, [7, 3, 5]), (2, 3, 5, [1, 2, 3, 4, 5]),
         (3, 4, 6, [5, 7, 3, 1, 9, 2]), (2, 3, 3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 3]),
         (5, 1, 1, [8, 3]), (1, 1, 1, [2, 5])]


def bit_report(got: torch.Tensor, expected: torch.Tensor) -> str:
    """'' where got is expected bit for bit (NaN payloads too), with its shape, dtype and strides."""
    if got.shape != expected.shape or got.dtype != expected.dtype or got.stride() != expected.stride():
        return (f"shape {tuple(got.shape)} {got.dtype} strides {got.stride()} against {tuple(expected.shape)} "
                f"{expected.dtype} {expected.stride()}")
    if got.numel() == 0:
        return ""
    report = mismatch_report(got, expected)
    if report:
        return report
    bits = {8: torch.int64, 4: torch.int32, 2: torch.int16}[got.element_size()]
    same = torch.equal(got.contiguous().view(bits), expected.contiguous().view(bits))
    return "" if same else "the same values, other bits (a NaN's payload or a zero's sign)"


class Calls:
    """Counts the calls of _C._concatenate_channels (hardact's copy taken) while in use."""

    def __init__(self) -> None:
        self.count = 0
        self._binding = functional._C._concatenate_channels

    def __call__(self, tensors):
        self.count += 1
        return self._binding(tensors)

    def __enter__(self) -> "Calls":
        self._patch = mock.patch.object(functional._C, "_concatenate_channels", self)
        self._patch.start()
        return self

    def __exit__(self, *exc) -> None:
        self._patch.stop()


def torch_cat_or_error(tensors):
    """torch.cat(tensors, 1), or the type of the error it raises."""
    try:
        return torch.cat(tensors, 1)
    except Exception as error:  # noqa: BLE001  (the error type is what is compared)
        return type(error)


def record_as_torch_cat(checks, tensors, what: str, hardact_expected: bool) -> None:
    """concatenate_channels(tensors) against torch.cat's result (or its error type), and whether
    hardact's copy was taken."""
    expected = torch_cat_or_error(tensors)
    with Calls() as calls:
        if isinstance(expected, type):
            checks.record(raises(expected, lambda: ha.concatenate_channels(tensors)), f"{what}: torch.cat's error")
        else:
            checks.record(bit_report(ha.concatenate_channels(tensors), expected), what)
    checks.record("" if (calls.count == 1) == hardact_expected else f"{calls.count} calls",
                  f"{what}: hardact's copy {'taken' if hardact_expected else 'not taken'}")


def channels_last(n: int, c: int, h: int, w: int, **options) -> torch.Tensor:
    return torch.randn(n, c, h, w, **options).contiguous(memory_format=torch.channels_last)


# ---- no GPU --------------------------------------------------------------------------------------

def test_torch_cat_off_the_gpu(checks):
    torch.manual_seed(SEED)
    for dtype in DTYPES:
        tensors = [channels_last(2, c, 5, 7, dtype=dtype) for c in (3, 5, 2)]
        record_as_torch_cat(checks, tensors, f"CPU {NAMES[dtype]}", False)
    record_as_torch_cat(checks, [channels_last(2, 3, 5, 7), torch.randn(2, 4, 5, 7)], "CPU, one channels-first", False)
    record_as_torch_cat(checks, [channels_last(2, 3, 5, 7), channels_last(2, 3, 5, 7, dtype=torch.float16)],
                        "CPU, mixed dtypes (promoted)", False)
    record_as_torch_cat(checks, [channels_last(2, 3, 5, 7), channels_last(2, 3, 4, 7)], "CPU, other heights", False)
    record_as_torch_cat(checks, (channels_last(2, 3, 5, 7),), "CPU, one tensor in a tuple", False)
    meta = [torch.empty(2, c, 5, 7, device="meta", memory_format=torch.channels_last) for c in (3, 4)]
    with Calls() as calls:
        got = ha.concatenate_channels(meta)
    checks.record("" if got.shape == (2, 7, 5, 7) and got.is_meta and calls.count == 0 else f"{got.shape}",
                  "meta: torch.cat's shape, no copy")


def test_compiled_is_torch_cat(checks):
    torch.manual_seed(SEED)
    tensors = [channels_last(2, c, 5, 7) for c in (3, 5)]
    compiled = torch.compile(lambda a, b: ha.concatenate_channels([a, b]) * 2, backend="eager", fullgraph=True)
    checks.record(bit_report(compiled(*tensors), torch.cat(tensors, 1) * 2), "torch.compile, fullgraph")


def test_binding_refusals_without_a_gpu(checks):
    binding = ha._C._concatenate_channels
    x = channels_last(2, 3, 5, 7)
    checks.record(raises(TypeError, lambda: binding(x)), "a tensor, not a list")
    checks.record(raises(TypeError, lambda: binding([1.0])), "a list holding a float")
    checks.record(raises(TypeError, lambda: binding()), "no argument")
    checks.record(raises(ValueError, lambda: binding([])), "an empty list")
    try:
        binding([x, x])
        checks.record("no error", "CPU tensors")
    except ValueError as error:
        checks.record("" if "torch.cat" in str(error) else f"says {error}", "CPU tensors: ValueError naming torch.cat")
    meta = torch.empty(2, 3, 5, 7, device="meta", memory_format=torch.channels_last)
    checks.record(raises(ValueError, lambda: binding([meta, meta])), "meta tensors")


# ---- GPU -----------------------------------------------------------------------------------------

def random_bits(shape, dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """Every bit pattern equally likely: NaNs of many payloads, infinities, signed zeros, subnormals."""
    size = torch.empty(0, dtype=dtype).element_size()
    return torch.randint(0, 256, (*shape[:-1], shape[-1] * size), generator=generator, device="cuda",
                         dtype=torch.uint8).view(dtype)


def cuda_channels_last(n, c, h, w, dtype, generator) -> torch.Tensor:
    if n * c * h * w == 0:  # no bits to draw; a view of an empty draw has strides channels-last refuses
        return torch.empty(n, c, h, w, dtype=dtype, device="cuda", memory_format=torch.channels_last)
    return random_bits((n, h, w, c), dtype, generator).permute(0, 3, 1, 2)


@pytest.mark.cuda
def test_bit_for_bit(checks, generator):
    for dtype in DTYPES:
        for n, h, w, channels in CASES:
            tensors = [cuda_channels_last(n, c, h, w, dtype, generator) for c in channels]
            record_as_torch_cat(checks, tensors, f"{NAMES[dtype]} {n}x{h}x{w} {channels}", True)
            direct = ha._C._concatenate_channels(tuple(tensors))
            checks.record(bit_report(direct, torch.cat(tensors, 1)), f"{NAMES[dtype]} {channels}: the binding, a tuple")
        # Off 16-byte alignment: the second input's storage starts an element later.
        base = random_bits((1 + 2 * 9 * 11 * 6,), dtype, generator)
        shifted = base[1:].view(2, 9, 11, 6).permute(0, 3, 1, 2)
        checks.record("" if shifted.data_ptr() % 16 and shifted.is_contiguous(memory_format=torch.channels_last)
                      else "aligned", f"{NAMES[dtype]} misaligned input")
        tensors = [cuda_channels_last(2, 8, 9, 11, dtype, generator), shifted, cuda_channels_last(2, 3, 9, 11, dtype,
                                                                                                  generator)]
        record_as_torch_cat(checks, tensors, f"{NAMES[dtype]} misaligned", True)
        # No gradient wanted: under no_grad an input requiring grad is copied by hardact too.
        leaf = cuda_channels_last(2, 4, 3, 5, dtype, generator).requires_grad_()
        with torch.no_grad():
            record_as_torch_cat(checks, [leaf, cuda_channels_last(2, 4, 3, 5, dtype, generator)],
                                f"{NAMES[dtype]} requires_grad under no_grad", True)


@pytest.mark.cuda
def test_empty_rows_from_the_binding(checks, generator):
    for n, h, w in ((0, 3, 5), (2, 0, 5), (2, 3, 0)):
        tensors = [cuda_channels_last(n, c, h, w, torch.float32, generator) for c in (3, 4)]
        y = ha._C._concatenate_channels(tensors)
        checks.record("" if y.shape == (n, 7, h, w) and y.is_contiguous(memory_format=torch.channels_last)
                      and y.is_cuda else f"{tuple(y.shape)} {y.stride()}", f"binding, {n}x{h}x{w}: empty output")


@pytest.mark.cuda
def test_binding_refusals(checks, generator):
    binding = ha._C._concatenate_channels
    x = cuda_channels_last(2, 3, 5, 7, torch.float32, generator)
    checks.record(raises(ValueError, lambda: binding([x, x.contiguous()])), "a channels-first input")
    other_height = cuda_channels_last(2, 3, 4, 7, torch.float32, generator)
    checks.record(raises(ValueError, lambda: binding([x, other_height])), "another height")
    checks.record(raises(ValueError, lambda: binding([x, x[:1]])), "another batch")
    checks.record(raises(ValueError, lambda: binding([x, x[0]])), "a 3-D input")
    checks.record(raises(TypeError, lambda: binding([x, x.half()])), "mixed dtypes")
    checks.record(raises(TypeError, lambda: binding([x.int(), x.int()])), "int32")


@pytest.mark.cuda
def test_the_rest_is_torch_cat(checks, generator):
    def cl(c, h=5, w=7, dtype=torch.float32, n=2):
        return cuda_channels_last(n, c, h, w, dtype, generator)

    wide = cl(9)
    cases = [
        ("a channels-first input", [cl(3), torch.randn(2, 4, 5, 7, device="cuda", generator=generator)]),
        ("a channel slice", [cl(3), wide[:, 2:6]]),
        ("a channels-first (N, 1, H, W)", [cl(3), torch.randn(2, 1, 5, 7, device="cuda", generator=generator)]),
        ("an input of no channels", [cl(3), cl(0), cl(2)]),
        ("(N, 1, 1, 1) inputs", [cl(1, 1, 1), cl(1, 1, 1)]),
        ("an empty batch", [cl(3, n=0), cl(4, n=0)]),
        ("no rows", [cl(3, 0, 7), cl(4, 0, 7)]),
        ("mixed dtypes", [cl(3), cl(4, dtype=torch.float16)]),
        ("another height", [cl(3), cl(4, h=4)]),
        ("a CPU tensor", [cl(3), channels_last(2, 4, 5, 7)]),
        ("int32", [cl(3).int(), cl(4).int()]),
        ("one tensor", [cl(3)]),
    ]
    for what, tensors in cases:
        record_as_torch_cat(checks, tensors, what, False)
    # A gradient wanted: torch.cat, differentiable, its gradient torch.cat's.
    leaves = [cl(3).requires_grad_(), cl(4)]
    with Calls() as calls:
        out = ha.concatenate_channels(leaves)
    checks.record("" if calls.count == 0 and out.grad_fn is not None else "not differentiable", "a gradient wanted")
    (gradient,) = torch.autograd.grad((out * torch.linspace(-1, 1, out.numel(), device="cuda").view_as(out)).sum(),
                                      [leaves[0]])
    expected = torch.cat(leaves, 1)
    (reference,) = torch.autograd.grad(
        (expected * torch.linspace(-1, 1, out.numel(), device="cuda").view_as(out)).sum(), [leaves[0]])
    checks.record(bit_report(gradient, reference), "a gradient wanted: torch.cat's gradient")


@pytest.mark.cuda
def test_in_a_cuda_graph(checks, generator):
    tensors = [cuda_channels_last(4, c, 14, 14, torch.bfloat16, generator) for c in (64, 80, 80, 80)]
    eager = ha.concatenate_channels(tensors)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        ha.concatenate_channels(tensors)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = ha.concatenate_channels(tensors)
    graph.replay()
    torch.cuda.synchronize()
    checks.record(bit_report(captured, eager), "graph replay")
