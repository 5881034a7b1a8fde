// The activations the fused operators take by name (fused_ops.cu, fused_autograd.cpp).
#pragma once

#include <c10/util/Exception.h>
#include <c10/util/string_view.h>

#include <string>

namespace hardact_torch {

enum class FusedActivation { identity, hardsigmoid, hardswish, relu6, hardtanh, relu, silu };

/// "identity", "hardsigmoid", "hardswish", "relu6", "hardtanh" (with min_val, max_val), "relu"
/// (hardtanh with bounds 0 and +inf: F.relu's results, NaN kept, -0.0 to +0.0) or "silu" (F.silu's).
inline FusedActivation parse_activation(const char* op_name, c10::string_view name) {
  if (name == "identity") return FusedActivation::identity;
  if (name == "hardswish") return FusedActivation::hardswish;
  if (name == "hardsigmoid") return FusedActivation::hardsigmoid;
  if (name == "relu6") return FusedActivation::relu6;
  if (name == "hardtanh") return FusedActivation::hardtanh;
  if (name == "relu") return FusedActivation::relu;
  if (name == "silu") return FusedActivation::silu;
  TORCH_CHECK_VALUE(false, "hardact::", op_name, ": activation must be one of identity, hardsigmoid, hardswish, relu6, ",
                    "hardtanh, relu, silu; got '", std::string(name.data(), name.size()), "'");
  return FusedActivation::identity;
}

}  // namespace hardact_torch
