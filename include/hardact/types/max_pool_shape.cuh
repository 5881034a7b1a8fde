/// @file types/max_pool_shape.cuh
/// @brief The shape of a max pooling (hardact::max_pool, pooling.cuh). Public types only, like
///        depthwise_shape.cuh: how the launcher checks a shape and lays its grid out is
///        dispatch/dispatch_max_pool.cuh.
#pragma once

#include <cstddef>

namespace hardact {

/// @brief A 2-D max pooling of channels-last x, [samples, height, width, channels] in memory
///        (PyTorch's (N, C, H, W) in torch.channels_last): torch.nn.MaxPool2d with dilation 1 and
///        no indices, its output size and windows as PyTorch computes them.
///
/// What hardact::max_pool takes: kernel sizes and strides of at least 1, 0 <= padding <= half the
/// kernel size (PyTorch's rule), an input of at least one row, column and channel whose padded
/// size holds the kernel, under 2^31 elements a sample (input and output), under 2^31 samples.
struct MaxPoolShape {
  std::size_t samples = 0;   ///< N
  std::size_t height = 0;    ///< H of x
  std::size_t width = 0;     ///< W of x
  std::size_t channels = 0;  ///< C
  int kernel_h = 2;          ///< window rows
  int kernel_w = 2;          ///< window columns
  int stride_h = 2;
  int stride_w = 2;
  int pad_h = 0;             ///< rows above and below x that no window value comes from
  int pad_w = 0;             ///< columns left and right of x, likewise
  /// Output size rounded up, as MaxPool2d(ceil_mode=True): a last window that starts inside x or its
  /// leading padding is kept, clipped to x.
  bool ceil_mode = false;

  /// Output rows as PyTorch computes them; 0 for a shape no pooling has (see above).
  constexpr std::size_t out_height() const { return out_extent(height, kernel_h, stride_h, pad_h); }
  /// Output columns, likewise.
  constexpr std::size_t out_width() const { return out_extent(width, kernel_w, stride_w, pad_w); }

 private:
  constexpr std::size_t out_extent(std::size_t extent, int kernel, int stride, int pad) const {
    if (extent == 0 || kernel <= 0 || stride <= 0 || pad < 0 || pad > kernel / 2) return 0;
    const std::size_t padded = extent + 2 * static_cast<std::size_t>(pad);
    const std::size_t window = static_cast<std::size_t>(kernel), step = static_cast<std::size_t>(stride);
    if (padded < extent || padded < window) return 0;  // wrapped around, or smaller than the window
    std::size_t out = (padded - window + (ceil_mode ? step - 1 : 0)) / step + 1;
    // PyTorch drops a last window that would start in the trailing padding.
    if (ceil_mode && (out - 1) * step >= extent + static_cast<std::size_t>(pad)) --out;
    return out;
  }
};

}  // namespace hardact
