"""Inference in CUDA graphs: cuda_graph_inference(model, example_input) replays one input shape;
cuda_graph_cache(model) captures a graph per input signature it sees, for a server's every shape."""

from __future__ import annotations

import threading
import time
import warnings
from collections import OrderedDict
from typing import Any, Callable

import torch
from torch import nn
from torch.utils._pytree import tree_map

__all__ = ["CudaGraphInference", "cuda_graph_inference", "CudaGraphCache", "cuda_graph_cache"]


def _refuse_training(model: nn.Module, who: str) -> None:
    if model.training:
        raise RuntimeError(f"hardact.{who}: the model is in training mode; call model.eval() "
                           "first (this captures inference: no autograd, no statistics updates)")


def _warm_up(model: nn.Module, static_input: torch.Tensor, warmup: int, side: torch.cuda.Stream) -> None:
    """warmup forwards on a side stream, as capture needs: the first calls choose cuDNN's algorithms
    and allocate the caching allocator's blocks outside the graph."""
    current = torch.cuda.current_stream(static_input.device)
    side.wait_stream(current)
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(warmup):
            model(static_input)
    current.wait_stream(side)


def _capture(model: nn.Module, static_input: torch.Tensor, **graph_options) -> tuple[torch.cuda.CUDAGraph, Any]:
    """One forward captured under torch.no_grad(): (the graph, its output tensors)."""
    graph = torch.cuda.CUDAGraph()
    current = torch.cuda.current_stream(static_input.device)
    try:
        with torch.no_grad(), torch.cuda.graph(graph, **graph_options):
            static_output = model(static_input)
    except BaseException:
        # torch.cuda.graph's exit leaves the capture stream current when ending the capture raises.
        torch.cuda.set_stream(current)
        raise
    return graph, static_output


def _copy_in_and_replay(static_input: torch.Tensor, graph: torch.cuda.CUDAGraph, static_output: Any, x: torch.Tensor,
            copy_output: bool) -> Any:
    """x copied into the captured input, the graph replayed, on the current stream."""
    static_input.copy_(x)
    graph.replay()
    if copy_output:
        return tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, static_output)
    return static_output


class CudaGraphInference:
    """A model's forward on one input shape, captured once in a CUDA graph and replayed per call.

    Made by cuda_graph_inference. A call copies its input into the captured input tensor (on the
    current stream), replays the graph there and returns the captured output: the same tensors at
    every call, overwritten by the next one (clone them to keep them, or pass copy_output=True).
    A replay launches every kernel of the forward in one host call, so the forward costs its GPU
    time only, not PyTorch's host time per module.
    """

    def __init__(self, model: nn.Module, example_input: torch.Tensor, warmup: int = 3, copy_output: bool = False):
        _refuse_training(model, "cuda_graph_inference")
        if not isinstance(example_input, torch.Tensor) or example_input.device.type != "cuda":
            raise ValueError("hardact.cuda_graph_inference: example_input must be a CUDA tensor")
        if warmup < 1:
            raise ValueError("hardact.cuda_graph_inference: warmup must be at least 1")
        self.model = model
        self.copy_output = copy_output
        # clone() keeps the example's strides (channels-last stays channels-last).
        self.static_input = example_input.detach().clone()
        _warm_up(model, self.static_input, warmup, torch.cuda.Stream(device=example_input.device))
        self.graph, self.static_output = _capture(model, self.static_input)

    def __call__(self, x: torch.Tensor) -> Any:
        expected = self.static_input
        if not isinstance(x, torch.Tensor) or x.shape != expected.shape or x.dtype != expected.dtype \
                or x.device != expected.device:
            raise ValueError(
                f"hardact.cuda_graph_inference: the graph was captured for a {tuple(expected.shape)} "
                f"{expected.dtype} tensor on {expected.device}; got "
                + (f"a {tuple(x.shape)} {x.dtype} tensor on {x.device}" if isinstance(x, torch.Tensor)
                   else type(x).__name__) + ". Capture another graph for another shape.")
        return _copy_in_and_replay(self.static_input, self.graph, self.static_output, x, self.copy_output)


def cuda_graph_inference(model: nn.Module, example_input: torch.Tensor, warmup: int = 3,
                         copy_output: bool = False) -> Callable[[torch.Tensor], Any]:
    """Returns a callable that runs model(x) for inputs like example_input by replaying a CUDA graph
    captured once, here: the rewritten models of fuse_batchnorm_activation and
    fuse_squeeze_excitation (and hardact's ops in any model) are capture-safe, as no hardact launch
    synchronises with the host or allocates outside PyTorch's allocator.

        model = model.cuda().eval()
        hardact_torch.fuse_batchnorm_activation(model)
        hardact_torch.fuse_squeeze_excitation(model)
        forward = hardact_torch.cuda_graph_inference(model, torch.randn(64, 3, 224, 224, device="cuda"))
        y = forward(x)  # x: the example's shape, dtype and device; y is overwritten by the next call

    Constraints, as for any CUDA graph: the model is in eval mode and its forward depends on the
    input's values only through tensors (no data-dependent Python control flow, no host
    synchronisation, no CPU tensors); every call's input has example_input's shape, dtype and device
    (another shape raises ValueError: capture another graph, or use cuda_graph_cache); the model's
    parameters and buffers are not replaced afterwards (in-place updates of their values are seen);
    no autograd (captured under torch.no_grad()). The output tensors are the graph's own and are
    overwritten by the next call unless copy_output=True. warmup calls run first on a side stream
    (cuDNN's algorithm choice and allocations happen outside the graph)."""
    return CudaGraphInference(model, example_input, warmup=warmup, copy_output=copy_output)


def _signature(x: torch.Tensor) -> tuple:
    """What a graph is captured for: shape, strides (the memory format: a channels-last and a
    contiguous input of one shape run different kernels into differently laid-out outputs), dtype
    and device."""
    return tuple(x.shape), x.stride(), x.dtype, x.device


def _model_device(model: nn.Module) -> torch.device | None:
    for tensor in model.parameters():
        return tensor.device
    for tensor in model.buffers():
        return tensor.device
    return None


class _Graph:
    """One captured signature: the graph and the tensors it reads and writes, held for its life."""

    __slots__ = ("static_input", "graph", "static_output")

    def __init__(self, static_input: torch.Tensor, graph: torch.cuda.CUDAGraph, static_output: Any):
        self.static_input, self.graph, self.static_output = static_input, graph, static_output


class CudaGraphCache:
    """model(x) for inputs of any signature, each replayed from a CUDA graph captured on its first
    call (shape, strides, dtype and device key a graph); made by cuda_graph_cache.

    Counters: captures, replays, evictions, eager_calls; capture_ms (the wall ms of each capture, its
    warm-up forwards included); len(cache), the graphs kept; `x in cache`, whether x's signature has one.

    Memory. All graphs capture into one private memory pool, so K signatures cost about the
    largest one's activations, not K times them. Sharing is safe under this contract: a call's
    outputs are valid until the next call of the cache (any signature, any thread), unless
    copy_output=True, which returns clones made right after the replay. Why: a graph's replay
    writes its intermediates into pool blocks that were free at some moment of its capture; a graph
    captured later may have been handed those blocks, for its own intermediates (rewritten at each of
    its replays before being read) or for its outputs (clobbered then, hence the contract). Every
    graph's input and output tensors are held by the cache, so no later capture is handed their
    blocks while the graph lives; an evicted graph is released (`del`) and its blocks return to the
    pool. Evicting synchronises the device first (the capture that follows does anyway). All
    captures use one capture stream, as the allocator reuses a free block only on the stream it was
    allocated on. Capture the largest shape first where you can (call the cache on it at start-up):
    smaller shapes then fit in its blocks, where a larger shape after smaller ones needs new ones.

    Threads: one lock around lookup, capture and replay; replays run on the calling thread's current
    stream, and a call on another stream than the previous call's waits for that stream first, so
    replays never overlap on the GPU. Calls from several threads need copy_output=True (the clone
    is made inside the lock) or their own synchronisation, as any thread's next call overwrites the
    outputs. Captures use capture_error_mode="thread_local": other threads may allocate and launch
    meanwhile.

    Eager instead of a graph (model(x) under torch.no_grad(), counted in eager_calls, each reason
    warned once): an input that is not a dense tensor, not on CUDA, or not on the device of the
    model's parameters (eager then does what it does: a CPU input to a CUDA model raises eager's
    error), and a signature whose capture failed (the exception is in the warning; that signature
    is not tried again). An error of the warm-up forwards (an input the model rejects) propagates.
    A model in training mode is refused with RuntimeError, at construction and at every call.
    """

    def __init__(self, model: nn.Module, max_graphs: int = 8, warmup: int = 3, copy_output: bool = False):
        _refuse_training(model, "cuda_graph_cache")
        if max_graphs < 1:
            raise ValueError("hardact.cuda_graph_cache: max_graphs must be at least 1")
        if warmup < 1:
            raise ValueError("hardact.cuda_graph_cache: warmup must be at least 1")
        self.model = model
        self.max_graphs = max_graphs
        self.warmup = warmup
        self.copy_output = copy_output
        self.captures = self.replays = self.evictions = self.eager_calls = 0
        self.capture_ms: list[float] = []
        self._graphs: OrderedDict[tuple, _Graph] = OrderedDict()  # least recently used first
        self._failed: set[tuple] = set()  # signatures whose capture raised: eager from then on
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        self._device: torch.device | None = None  # of the first capture: a model without parameters
        self._pool = None  # torch.cuda.graph_pool_handle(), made at the first capture
        self._capture_stream: torch.cuda.Stream | None = None
        self._last_stream: torch.cuda.Stream | None = None  # the stream of the last replay

    def __len__(self) -> int:
        return len(self._graphs)

    def __contains__(self, x: object) -> bool:
        return isinstance(x, torch.Tensor) and x.layout == torch.strided and _signature(x) in self._graphs

    def __call__(self, x: torch.Tensor) -> Any:
        _refuse_training(self.model, "cuda_graph_cache")
        reason = self._uncapturable(x)
        if reason is None:
            with self._lock:
                key = _signature(x)
                entry = self._graphs.get(key)
                if entry is not None:
                    self._graphs.move_to_end(key)
                elif key not in self._failed:
                    entry = self._capture(key, x)
                if entry is not None:
                    return self._replay(entry, x)
        else:
            self._warn_once(reason)
        with self._lock:
            self.eager_calls += 1
        with torch.no_grad():
            return self.model(x)

    def clear(self) -> None:
        """Releases every graph (after a device synchronisation); the counters stay. The pool's memory
        returns to PyTorch's cache once no output of it is alive (torch.cuda.empty_cache() then
        returns it to the device)."""
        with self._lock:
            if self._graphs:
                torch.cuda.synchronize(self._device)
            self._graphs.clear()
            self._pool = None

    def _uncapturable(self, x: object) -> str | None:
        """Why x runs eagerly, or None."""
        if not isinstance(x, torch.Tensor) or x.layout != torch.strided:
            what = type(x).__name__ if not isinstance(x, torch.Tensor) else f"a {x.layout} tensor"
            return f"an input that is not a dense tensor ({what}) runs eagerly"
        device = _model_device(self.model)
        device = self._device if device is None else device
        if x.device.type != "cuda":
            return f"a {x.device.type} input runs eagerly (CUDA graphs capture CUDA inputs)"
        if device is not None and x.device != device:
            return f"an input on {x.device} runs eagerly (the model is on {device})"
        return None

    def _warn_once(self, message: str) -> None:
        with self._lock:
            if message in self._warned:
                return
            self._warned.add(message)
        warnings.warn(f"hardact.cuda_graph_cache: {message}", RuntimeWarning, stacklevel=3)

    def _capture(self, key: tuple, x: torch.Tensor) -> _Graph | None:
        """Warms up and captures x's signature (the lock held); None when the capture raised. A
        warm-up error (the model rejects x) propagates, and nothing is evicted."""
        if self._capture_stream is None:
            self._device = x.device
            self._capture_stream = torch.cuda.Stream(device=x.device)
        start = time.perf_counter()
        static_input = x.detach().clone()  # keeps x's strides when x is dense
        _warm_up(self.model, static_input, self.warmup, self._capture_stream)
        if len(self._graphs) >= self.max_graphs:
            # The evicted graph's replays must be done before its blocks are handed out again.
            torch.cuda.synchronize(x.device)
            del self._graphs[next(iter(self._graphs))]
            self.evictions += 1
            if not self._graphs:
                self._pool = None  # the allocator refuses to share a pool that no graph uses any more
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()
        try:
            graph, static_output = _capture(self.model, static_input, pool=self._pool, stream=self._capture_stream,
                                            capture_error_mode="thread_local")
        except Exception as error:  # noqa: BLE001  (any capture failure falls back to eager, said once)
            self._failed.add(key)
            if not self._graphs:
                self._pool = None  # a fresh pool next time: no graph may hold this one any more
            message = (f"capturing a {tuple(x.shape)} {x.dtype} input with strides {x.stride()} failed "
                       f"({type(error).__name__}: {error}); that signature runs eagerly")
            self._warned.add(message)
            warnings.warn(f"hardact.cuda_graph_cache: {message}", RuntimeWarning, stacklevel=3)
            return None
        self.capture_ms.append((time.perf_counter() - start) * 1e3)
        self.captures += 1
        entry = self._graphs[key] = _Graph(static_input, graph, static_output)
        return entry

    def _replay(self, entry: _Graph, x: torch.Tensor) -> Any:
        """Replays entry on the current stream, after the previous replay's stream (the lock held)."""
        current = torch.cuda.current_stream(x.device)
        if self._last_stream is not None and self._last_stream != current:
            current.wait_stream(self._last_stream)  # graphs share pool blocks: no two replays overlap
        self._last_stream = current
        self.replays += 1
        return _copy_in_and_replay(entry.static_input, entry.graph, entry.static_output, x, self.copy_output)


def cuda_graph_cache(model: nn.Module, max_graphs: int = 8, warmup: int = 3,
                     copy_output: bool = False) -> CudaGraphCache:
    """Returns a callable that runs model(x) for inputs of any shape at graph speed: the first call
    with a new signature (shape, strides, dtype, device) warms up and captures a CUDA graph for it
    (as cuda_graph_inference does), later calls replay it. At most max_graphs graphs are kept; the
    least recently used is evicted and released (its output tensors must not be used afterwards,
    unless copy_output=True gave you clones).

        model = model.cuda().eval()
        hardact_torch.optimize_for_inference(model)
        forward = hardact_torch.cuda_graph_cache(model)
        y = forward(x)  # any batch size; y is valid until the next call of forward

    The graphs share one memory pool; outputs are valid until the next call of the cache unless
    copy_output=True; thread-safe (one lock); what it cannot capture runs eagerly, with one
    warning per reason: CudaGraphCache says why and how. The constraints on the model are
    cuda_graph_inference's."""
    return CudaGraphCache(model, max_graphs=max_graphs, warmup=warmup, copy_output=copy_output)
