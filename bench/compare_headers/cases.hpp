// The cases of compare-header-versions: shapes and element types only, no library names, so that
// case.cu compiles against either copy of the headers and main.cu against neither.
#pragma once

#include <cstddef>

namespace compare_headers {

enum class Element { f32, bf16, f64 };

inline std::size_t element_bytes(Element e) { return e == Element::f64 ? 8 : e == Element::f32 ? 4 : 2; }

/// 4096 x 393216, the reference shape; the NCHW rows use 5350 x 96 x 56 x 56 (the closest batch).
constexpr std::size_t kRows = 4096;
constexpr std::size_t kColumns = 393216;
constexpr std::size_t kReference = kRows * kColumns;
constexpr std::size_t kBatch = 5350, kChannels = 96, kPlane = 56 * 56;
constexpr std::size_t kImages = kBatch * kChannels * kPlane;

struct CaseSpec {
  const char* name;
  Element element;
  std::size_t n;
  int full_inputs;         ///< full-length inputs read (the output is written once more)
  bool in_place;           ///< the output is the input
  std::size_t in_offset;   ///< elements the first input starts past its buffer's start
  std::size_t vector_length;  ///< elements of each broadcast vector (0: none)
};

inline constexpr CaseSpec kCases[] = {
    {"float hardsigmoid", Element::f32, kReference, 1, false, 0, 0},
    {"float hardsigmoid in place", Element::f32, kReference, 1, true, 0, 0},
    {"float hardsigmoid x+1 -> y", Element::f32, kReference, 1, false, 1, 0},
    {"bfloat16 hardsigmoid", Element::bf16, kReference, 1, false, 0, 0},
    {"double hardsigmoid", Element::f64, kReference / 2, 1, false, 0, 0},
    {"float HardSigmoidBackward", Element::f32, kReference, 2, false, 0, 0},
    {"float BatchNorm+hardswish NCHW", Element::f32, kImages, 1, false, 0, kChannels},
    {"bf16 BatchNorm+hardswish NCHW", Element::bf16, kImages, 1, false, 0, kChannels},
    {"float bias+hardswish last dim", Element::f32, kReference, 1, false, 0, kColumns},
    {"bf16 bias+hardswish last dim", Element::bf16, kReference, 1, false, 0, kColumns},
    {"float residual+hardswish", Element::f32, kReference, 2, false, 0, 0},
    {"float hardsigmoid gate NCHW", Element::f32, kImages, 1, false, 0, kBatch * kChannels},
};
inline constexpr int kCaseCount = static_cast<int>(sizeof(kCases) / sizeof(kCases[0]));

/// Device pointers of one launch: in0 (already offset), in1, the broadcast vectors v0 and v1, out.
struct Pointers {
  const void* in0;
  const void* in1;
  const void* v0;
  const void* v1;
  void* out;
};

}  // namespace compare_headers
