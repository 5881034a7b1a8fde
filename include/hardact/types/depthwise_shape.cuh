/// @file types/depthwise_shape.cuh
/// @brief The shape of a depthwise convolution (hardact::depthwise_conv, depthwise.cuh). Public
///        types only, like operand.cuh: how the launcher checks a shape and lays its grid out is
///        dispatch/dispatch_depthwise.cuh.
#pragma once

#include <cstddef>

namespace hardact {

/// @brief A depthwise convolution of channels-last x, [samples, height, width, channels] in memory
///        (PyTorch's (N, C, H, W) in torch.channels_last): one K x K filter per channel, no bias,
///        zero padding, dilation 1, groups = channels.
///
/// What hardact::depthwise_conv takes: kernel_size 3 or 5, stride 1 or 2, 0 <= pad_h, pad_w <
/// kernel_size, channels a positive multiple of 4 up to 1024, an input at least as large as the
/// filter once padded, under 2^31 elements a sample (input and output), at most 65535 samples;
/// with concatenate_input, stride 1 and an output of the input's height and width.
struct DepthwiseConvShape {
  std::size_t samples = 0;   ///< N
  std::size_t height = 0;    ///< H of x
  std::size_t width = 0;     ///< W of x
  std::size_t channels = 0;  ///< C
  int kernel_size = 3;       ///< K: the filter is K x K
  int stride = 1;            ///< the same along H and W
  int pad_h = 0;             ///< rows of zeros above and below x
  int pad_w = 0;             ///< columns of zeros left and right of x
  /// y holds 2 C channels a position: x's C, then the convolution's (torch.cat([x, conv(x)], 1),
  /// a ghost module's concatenation, written by the convolution instead of a copy after it). For
  /// stride 1 and an output of the input's size only (odd K, pad_h = pad_w = K / 2).
  bool concatenate_input = false;

  /// Output rows, (H + 2 pad_h - K) / stride + 1; 0 where the padded input is smaller than the
  /// filter, or the stride or the padding is out of range.
  constexpr std::size_t out_height() const { return out_extent(height, pad_h); }
  /// Output columns, (W + 2 pad_w - K) / stride + 1; 0 as for out_height.
  constexpr std::size_t out_width() const { return out_extent(width, pad_w); }
  /// Elements of y a position: channels, or 2 channels with concatenate_input.
  constexpr std::size_t out_channels() const { return concatenate_input ? 2 * channels : channels; }

 private:
  constexpr std::size_t out_extent(std::size_t extent, int pad) const {
    if (stride <= 0 || kernel_size <= 0 || pad < 0) return 0;
    const std::size_t padded = extent + 2 * static_cast<std::size_t>(pad);
    const std::size_t filter = static_cast<std::size_t>(kernel_size);
    if (padded < extent || padded < filter) return 0;  // wrapped around, or smaller than the filter
    return (padded - filter) / static_cast<std::size_t>(stride) + 1;
  }
};

}  // namespace hardact
