"""cuda_graph_cache: a CUDA graph captured per input signature, replayed after, in one shared pool.

Without a GPU: its refusals (a model in training mode, at construction and at a call; max_graphs or
warmup below 1) and its eager fallbacks (a CPU input, an input that is not a tensor: eager's result,
one warning per reason). On a GPU: a rewritten block (optimize_for_inference) gives eager's results
bit for bit for three batch sizes in float32 and bfloat16 channels-last, capturing each signature
once (a contiguous input of a captured shape is another signature); graphs sharing the pool keep
each other's results right when replayed in any order, on two streams too; least recently used
eviction; a CPU input to a CUDA model warns and raises eager's error; a failed capture falls back to
eager once and for all; four threads; the memory of four captured shapes against the largest alone.
"""

from __future__ import annotations

import gc
import threading
import warnings

import pytest
import torch
from torch import nn

import hardact_torch as ha
from checklib import NAMES, mismatch_report, raises
from test_cuda_graph import block

SEED = 41


def rewritten_block(dtype: torch.dtype = torch.float32, channels: int = 16) -> nn.Module:
    torch.manual_seed(SEED)
    model = block(channels).cuda().eval()
    ha.optimize_for_inference(model)
    return model.to(dtype=dtype, memory_format=torch.channels_last)


def image(generator: torch.Generator, batch: int, dtype: torch.dtype = torch.float32, channels: int = 16,
          size: int = 14) -> torch.Tensor:
    return (torch.randn(batch, channels, size, size, device="cuda", generator=generator).to(dtype)
            .contiguous(memory_format=torch.channels_last))


def eager(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(x)


def counters(cache: ha.CudaGraphCache) -> tuple[int, int, int, int, int]:
    return cache.captures, cache.replays, cache.evictions, cache.eager_calls, len(cache)


def expect_counters(checks, cache: ha.CudaGraphCache, expected: tuple, what: str) -> None:
    got = counters(cache)
    checks.record("" if got == expected else f"(captures, replays, evictions, eager_calls, len) {got}, "
                  f"expected {expected}", what)


def recorded_warnings(call) -> tuple[list[str], object]:
    """The messages of the cache's warnings that call() emits (each shown: filter 'always'; PyTorch's
    own left out) and call()'s result."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return [str(w.message) for w in caught if str(w.message).startswith("hardact.cuda_graph_cache")], result


# ---- no GPU needed ------------------------------------------------------------------------------

def test_cache_refusals(checks) -> None:
    model = nn.Sequential(nn.Linear(4, 4)).eval()
    checks.record(raises(RuntimeError, lambda: ha.cuda_graph_cache(nn.Linear(4, 4).train())),
                  "a model in training mode is refused at construction")
    checks.record(raises(ValueError, lambda: ha.cuda_graph_cache(model, max_graphs=0)), "max_graphs 0 is refused")
    checks.record(raises(ValueError, lambda: ha.cuda_graph_cache(model, warmup=0)), "no warm-up call is refused")
    cache = ha.cuda_graph_cache(model)
    model.train()
    checks.record(raises(RuntimeError, lambda: cache(torch.zeros(2, 4))),
                  "a model switched to training mode after construction is refused at the call")
    checks.record("" if counters(cache) == (0, 0, 0, 0, 0) else f"counters {counters(cache)}",
                  "a refused call counts nothing")


def test_cache_eager_fallbacks(checks) -> None:
    """A CPU model: nothing to capture; eager's results, one warning per reason, counted."""

    class Summed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 3)

        def forward(self, x):
            return self.linear(sum(x) if isinstance(x, (list, tuple)) else x)

    torch.manual_seed(SEED)
    model = Summed().eval()
    cache = ha.cuda_graph_cache(model)
    x = torch.randn(5, 4)
    messages, got = recorded_warnings(lambda: [cache(x), cache(x)])
    with torch.no_grad():
        expected = model(x)
    checks.record(mismatch_report(got[0], expected, x) or mismatch_report(got[1], expected, x),
                  "a CPU input gives eager's result")
    checks.record("" if len(messages) == 1 and "cpu input runs eagerly" in messages[0] else f"warnings {messages}",
                  "a CPU input warns once")
    pair = [x, 2 * x]
    messages, got = recorded_warnings(lambda: [cache(pair), cache(pair)])
    with torch.no_grad():
        expected = model(pair)
    checks.record(mismatch_report(got[1], expected, x), "an input that is not a tensor gives eager's result")
    checks.record("" if len(messages) == 1 and "not a dense tensor (list)" in messages[0] else f"warnings {messages}",
                  "an input that is not a tensor warns once")
    expect_counters(checks, cache, (0, 0, 0, 4, 0), "four eager calls, nothing captured")
    checks.record("" if x not in cache and pair not in cache else "in the cache", "nothing is in the cache")


# ---- GPU ----------------------------------------------------------------------------------------

@pytest.mark.cuda
@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=NAMES.get)
def test_cache_captures_then_replays(checks, generator, dtype) -> None:
    model = rewritten_block(dtype)
    cache = ha.cuda_graph_cache(model)
    batches = (3, 8, 5, 3, 8, 5, 8)
    first_output = {}
    for i, batch in enumerate(batches):
        x = image(generator, batch, dtype)
        got = cache(x)
        checks.record(mismatch_report(got, eager(model, x), x), f"{NAMES[dtype]} call {i} (batch {batch}) equals eager")
        if batch in first_output:
            checks.record("" if got.data_ptr() == first_output[batch] else "a new tensor",
                          f"{NAMES[dtype]} call {i} returns batch {batch}'s graph output")
        first_output.setdefault(batch, got.data_ptr())
        checks.record("" if x in cache else "not in the cache", f"{NAMES[dtype]} batch {batch} is in the cache")
    expect_counters(checks, cache, (3, 7, 0, 0, 3), f"{NAMES[dtype]} three captures, every call replayed")
    checks.record("" if len(cache.capture_ms) == 3 and all(ms > 0 for ms in cache.capture_ms)
                  else f"capture_ms {cache.capture_ms}", f"{NAMES[dtype]} the ms of each capture")
    # The same shape, contiguous (NCHW): another signature, another graph, eager's result.
    x = image(generator, 3, dtype).contiguous()
    checks.record("" if x not in cache else "found", f"{NAMES[dtype]} a contiguous input is another signature")
    checks.record(mismatch_report(cache(x), eager(model, x), x), f"{NAMES[dtype]} contiguous batch 3 equals eager")
    expect_counters(checks, cache, (4, 8, 0, 0, 4), f"{NAMES[dtype]} the contiguous input was captured")


@pytest.mark.cuda
def test_cache_shared_pool_replays_in_any_order(checks, generator) -> None:
    """Graphs captured into one pool, replayed out of capture order: each call's result is right,
    copy_output's clones survive later replays, and calls on two streams do not overlap on the GPU
    (the intermediates of the two graphs share blocks)."""
    model = rewritten_block(channels=32)
    for copy_output in (False, True):
        cache = ha.cuda_graph_cache(model, copy_output=copy_output)
        kept = []
        for i, batch in enumerate((16, 4, 16, 4, 16, 2, 4)):
            x = image(generator, batch, channels=32, size=28)
            got = cache(x)
            checks.record(mismatch_report(got, eager(model, x), x),
                          f"copy_output={copy_output}: call {i} (batch {batch}) equals eager")
            kept.append((got, x))
        if copy_output:
            for i, (got, x) in enumerate(kept):
                checks.record(mismatch_report(got, eager(model, x), x), f"call {i}'s clone after every later call")
    # Two streams: the large batch's replay, then the small one's on another stream right away.
    cache = ha.cuda_graph_cache(model, copy_output=True)
    large, small = image(generator, 64, channels=32, size=28), image(generator, 2, channels=32, size=28)
    cache(large), cache(small)
    streams = torch.cuda.Stream(), torch.cuda.Stream()
    for stream in streams:
        stream.wait_stream(torch.cuda.current_stream())
    results = []
    for _ in range(3):
        with torch.cuda.stream(streams[0]):
            results.append((cache(large), large))
        with torch.cuda.stream(streams[1]):
            results.append((cache(small), small))
    torch.cuda.synchronize()
    for i, (got, x) in enumerate(results):
        checks.record(mismatch_report(got, eager(model, x), x), f"two streams: call {i} equals eager")


@pytest.mark.cuda
def test_cache_evicts_least_recently_used(checks, generator) -> None:
    model = rewritten_block()
    cache = ha.cuda_graph_cache(model, max_graphs=2)
    x1, x2, x3 = (image(generator, batch) for batch in (1, 2, 3))
    for x in (x1, x2, x1, x3):  # x1 touched after x2: x3 evicts x2
        checks.record(mismatch_report(cache(x), eager(model, x), x), f"batch {x.shape[0]} equals eager")
    checks.record("" if x1 in cache and x2 not in cache and x3 in cache else "wrong graphs kept",
                  "the least recently used graph (batch 2) was evicted")
    expect_counters(checks, cache, (3, 4, 1, 0, 2), "three captures, one eviction")
    checks.record(mismatch_report(cache(x2), eager(model, x2), x2), "batch 2 captured again equals eager")
    checks.record("" if x1 not in cache and x2 in cache and x3 in cache else "wrong graphs kept",
                  "then batch 1 was the least recently used")
    expect_counters(checks, cache, (4, 5, 2, 0, 2), "four captures, two evictions")
    # One graph at a time: each capture evicts the only graph, whose output is still held here.
    single = ha.cuda_graph_cache(model, max_graphs=1)
    held = []
    for i, x in enumerate((x1, x2, x1, x3, x3)):
        got = single(x)
        checks.record(mismatch_report(got, eager(model, x), x), f"max_graphs=1 call {i} equals eager")
        held.append(got)
    expect_counters(checks, single, (4, 5, 3, 0, 1), "max_graphs=1: four captures, three evictions")
    single.clear()
    checks.record("" if len(single) == 0 and x3 not in single else "graphs left", "clear releases every graph")
    checks.record(mismatch_report(single(x2), eager(model, x2), x2), "a capture after clear equals eager")


@pytest.mark.cuda
def test_cache_falls_back_to_eager(checks, generator) -> None:
    model = rewritten_block()
    cache = ha.cuda_graph_cache(model)
    x = image(generator, 2).cpu()
    messages, reports = recorded_warnings(lambda: [raises(RuntimeError, lambda: cache(x)) for _ in range(2)])
    checks.record(reports[0] or reports[1], "a CPU input to a CUDA model raises eager's RuntimeError, twice")
    checks.record("" if len(messages) == 1 and "cpu input runs eagerly" in messages[0] else f"warnings {messages}",
                  "a CPU input warns that it runs eagerly")
    expect_counters(checks, cache, (0, 0, 0, 2, 0), "two eager calls")

    class RefusesCapture(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x * 2  # some work first: a capture of nothing has PyTorch warn of an empty graph
            if torch.cuda.is_current_stream_capturing():
                raise RuntimeError("not capturable")
            return y

    shy = ha.cuda_graph_cache(RefusesCapture().eval())
    x = image(generator, 2)
    stream = torch.cuda.current_stream()
    messages, got = recorded_warnings(lambda: [shy(x) for _ in range(3)])
    checks.record("" if all(torch.equal(g, x * 2) for g in got) else "another result",
                  "a signature whose capture failed runs eagerly")
    checks.record("" if len(messages) == 1 and "not capturable" in messages[0] else f"warnings {messages}",
                  "a failed capture warns once, with its error")
    checks.record("" if torch.cuda.current_stream() == stream else "the current stream changed",
                  "a failed capture leaves the current stream as it was")
    expect_counters(checks, shy, (0, 0, 0, 3, 0), "no graph, three eager calls")
    checks.record(mismatch_report(cache(x), eager(model, x), x), "a capture after another cache's failure")


@pytest.mark.cuda
def test_cache_threads(checks, generator) -> None:
    """Four threads, each with its own two batch sizes, 20 calls each; copy_output=True, as a
    thread's next call would overwrite another's outputs."""
    model = rewritten_block()
    cache = ha.cuda_graph_cache(model, copy_output=True)
    batches = [(1 + t, 5 + 2 * t) for t in range(4)]
    inputs = [[image(generator, b) for b in pair] for pair in batches]
    expected = [[eager(model, x) for x in xs] for xs in inputs]
    results: list[list[torch.Tensor]] = [[] for _ in batches]
    errors: list[BaseException] = []
    start = threading.Barrier(len(batches))

    def serve(t: int) -> None:
        try:
            start.wait()
            for j in range(20):
                results[t].append(cache(inputs[t][j % 2]))
        except BaseException as error:  # noqa: BLE001  (reported by the main thread)
            errors.append(error)

    threads = [threading.Thread(target=serve, args=(t,)) for t in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    torch.cuda.synchronize()
    checks.record("" if not errors else repr(errors[0]), "no thread raised")
    for t, outputs in enumerate(results):
        checks.record("" if len(outputs) == 20 else f"{len(outputs)} results", f"thread {t} made 20 calls")
        for j, got in enumerate(outputs):
            checks.record(mismatch_report(got, expected[t][j % 2], inputs[t][j % 2]),
                          f"thread {t} call {j} equals eager")
    expect_counters(checks, cache, (8, 80, 0, 0, 8), "eight captures, 80 replays")


@pytest.mark.cuda
def test_cache_memory_of_shared_pool(checks, generator) -> None:
    """Four batch sizes captured largest first hold at most 1.5 x the largest one's graph alone
    (separate pools would hold the sum, checked to be more). Measured: memory reserved after the
    captures (a graph pool keeps the blocks its intermediates freed: allocated-memory peaks do not
    see them), and the peak of allocated memory during the captures."""
    torch.manual_seed(SEED)
    model = nn.Sequential(nn.Conv2d(4, 128, 3, padding=1, bias=False), nn.BatchNorm2d(128), nn.Hardswish(),
                          nn.Conv2d(128, 128, 3, padding=1, bias=False), nn.BatchNorm2d(128), nn.Hardswish(),
                          nn.Conv2d(128, 4, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten()).cuda().eval()
    ha.fuse_batchnorm_activation(model)
    inputs = {batch: torch.randn(batch, 4, 64, 64, device="cuda", generator=generator) for batch in (32, 24, 16, 8)}

    def cost(batches) -> tuple[int, int]:
        """(bytes reserved after capturing batches in a new cache, peak bytes allocated above the start)."""
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        reserved, allocated = torch.cuda.memory_reserved(), torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        cache = ha.cuda_graph_cache(model)
        for batch in batches:
            checks.record(mismatch_report(cache(inputs[batch]), eager(model, inputs[batch])),
                          f"batch {batch} equals eager")
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        result = torch.cuda.memory_reserved() - reserved, torch.cuda.max_memory_allocated() - allocated
        del cache
        return result

    alone = {batch: cost([batch]) for batch in inputs}
    together = cost(list(inputs))
    largest = alone[32]
    mib = 2.0 ** -20
    checks.record("" if together[0] <= 1.5 * largest[0] else
                  f"{together[0] * mib:.1f} MiB reserved, the largest alone {largest[0] * mib:.1f} MiB",
                  "four graphs reserve at most 1.5 x the largest alone")
    checks.record("" if together[1] <= 1.5 * largest[1] else
                  f"{together[1] * mib:.1f} MiB peak, the largest alone {largest[1] * mib:.1f} MiB",
                  "four captures peak at most 1.5 x the largest alone")
    separate = sum(reserved for reserved, _ in alone.values())
    checks.record("" if separate > 1.5 * largest[0] else f"the four alone sum to {separate * mib:.1f} MiB",
                  "one pool per graph would exceed the bound (the check can fail)")
