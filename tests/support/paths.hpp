// The launcher's two kernels, forced in turn through hardact's internal tuning knob, so that every
// device sweep checks both the direct and the staged path at every size and offset, whatever the
// automatic rule would pick for that size on this GPU.
#pragma once

#include <hardact/hardact.cuh>

#include <string>
#include <vector>

namespace hardact_test {

using hardact::detail::ScopedTransformPath;
using hardact::detail::TransformPath;

/// The paths a call at `VecWidth` can take: both for the automatic width, the direct one for an
/// explicit width (which never stages).
template <int VecWidth>
std::vector<TransformPath> paths_under_test() {
  if (VecWidth == 0) return {TransformPath::direct, TransformPath::staged};
  return {TransformPath::direct};
}

inline std::string path_name(TransformPath path) {
  switch (path) {
    case TransformPath::direct: return "direct path";
    case TransformPath::staged: return "staged path";
    default: return "automatic path";
  }
}

}  // namespace hardact_test
