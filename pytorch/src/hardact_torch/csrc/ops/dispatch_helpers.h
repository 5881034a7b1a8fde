// Dispatcher and autograd plumbing shared by the C++ files that call hardact's operators through the
// dispatcher (the autograd kernels, the fused block's one-call forward, the Python bindings).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DispatchKeySet.h>
#include <torch/csrc/autograd/function.h>

#include <memory>

namespace hardact_torch {

/// The typed handle of a registered operator (`overload` "" for the default one); throws, as the
/// dispatcher does, when no such schema is registered.
template <class Signature>
c10::TypedOperatorHandle<Signature> find_op(const char* name, const char* overload = "") {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).template typed<Signature>();
}

/// The keys an Autograd kernel redispatches with (`keys & kBelowAutograd`), as PyTorch's generated code does.
constexpr c10::DispatchKeySet kBelowAutograd = c10::after_autograd_keyset;

/// An autograd Node owned the way PyTorch's graph expects (deleteNode frees long chains without recursion).
template <class NodeType>
std::shared_ptr<NodeType> new_node(NodeType* node) {
  return std::shared_ptr<NodeType>(node, torch::autograd::deleteNode);
}

}  // namespace hardact_torch
