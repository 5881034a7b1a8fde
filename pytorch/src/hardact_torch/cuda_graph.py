"""Inference in a CUDA graph, in one call: cuda_graph_inference(model, example_input)."""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn
from torch.utils._pytree import tree_map


class CudaGraphInference:
    """A model's forward on one input shape, captured once in a CUDA graph and replayed per call.

    Made by cuda_graph_inference. A call copies its input into the captured input tensor (on the
    current stream), replays the graph there and returns the captured output: the same tensors at
    every call, overwritten by the next one (clone them to keep them, or pass copy_output=True).
    A replay launches every kernel of the forward in one host call, so the forward costs its GPU
    time only, not PyTorch's host time per module.
    """

    def __init__(self, model: nn.Module, example_input: torch.Tensor, warmup: int = 3, copy_output: bool = False):
        if model.training:
            raise RuntimeError("hardact.cuda_graph_inference: the model is in training mode; call model.eval() "
                               "first (this captures inference: no autograd, no statistics updates)")
        if not isinstance(example_input, torch.Tensor) or example_input.device.type != "cuda":
            raise ValueError("hardact.cuda_graph_inference: example_input must be a CUDA tensor")
        if warmup < 1:
            raise ValueError("hardact.cuda_graph_inference: warmup must be at least 1")
        self.model = model
        self.copy_output = copy_output
        # clone() keeps the example's strides (channels-last stays channels-last).
        self.static_input = example_input.detach().clone()
        # Warm-up on a side stream, as capture needs: the first calls choose cuDNN's algorithms and
        # allocate the caching allocator's blocks outside the graph.
        side = torch.cuda.Stream(device=example_input.device)
        side.wait_stream(torch.cuda.current_stream(example_input.device))
        with torch.no_grad(), torch.cuda.stream(side):
            for _ in range(warmup):
                model(self.static_input)
        torch.cuda.current_stream(example_input.device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(self.graph):
            self.static_output = model(self.static_input)

    def __call__(self, x: torch.Tensor) -> Any:
        expected = self.static_input
        if not isinstance(x, torch.Tensor) or x.shape != expected.shape or x.dtype != expected.dtype \
                or x.device != expected.device:
            raise ValueError(
                f"hardact.cuda_graph_inference: the graph was captured for a {tuple(expected.shape)} "
                f"{expected.dtype} tensor on {expected.device}; got "
                + (f"a {tuple(x.shape)} {x.dtype} tensor on {x.device}" if isinstance(x, torch.Tensor)
                   else type(x).__name__) + ". Capture another graph for another shape.")
        self.static_input.copy_(x)
        self.graph.replay()
        if self.copy_output:
            return tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, self.static_output)
        return self.static_output


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
    (another shape raises ValueError: capture another graph); the model's parameters and buffers are
    not replaced afterwards (in-place updates of their values are seen); no autograd (captured under
    torch.no_grad()). The output tensors are the graph's own and are overwritten by the next call
    unless copy_output=True. warmup calls run first on a side stream (cuDNN's algorithm choice and
    allocations happen outside the graph)."""
    return CudaGraphInference(model, example_input, warmup=warmup, copy_output=copy_output)
