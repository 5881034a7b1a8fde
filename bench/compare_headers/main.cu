// compare-header-versions' program: the same calls through two copies of hardact in one process,
// the base revision's headers (namespace hardact_base, case.cu built as side_base) and the current
// ones (side_current), to show that a change to the headers changed neither results nor speed.
//
// For each case (cases.hpp: the standalone and fused rows of bench_interleaved.cu and
// bench_fused.cu), on fresh inputs: both sides' outputs are compared byte for byte on the device
// (the in-place case on copies of its input); then, after warm-ups, `reps` reps each time the
// copy (cudaMemcpyAsync device-to-device of half the call's bytes, so the same bytes are read and
// written), the base launch and the current launch with CUDA events, in the order copy, base,
// current on even reps and current, base, copy on odd ones. Per rep: x copy = copy time / launch
// time for each side, and current/base = base time / current time (above 1: the current headers
// faster). Printed per case: medians, the min-max spread over reps, and current/base's medians
// over even and odd reps alone; a table of the medians last.
//
// Usage: compare_headers [reps] (default 21). Exit status 1 if a launch fails or an output differs.
#include "cases.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace side_base {
cudaError_t launch_case(int index, const compare_headers::Pointers& p, cudaStream_t stream);
}
namespace side_current {
cudaError_t launch_case(int index, const compare_headers::Pointers& p, cudaStream_t stream);
}

namespace {

using namespace compare_headers;

#define CHECK(call)                                                                              \
  do {                                                                                           \
    const cudaError_t status_ = (call);                                                          \
    if (status_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(status_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

/// Fills `bytes` bytes with values of `element` uniform in [low, high), from a hash of the index.
__global__ void fill_kernel(void* data, std::size_t count, int element, std::uint64_t seed, float low, float high) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
    const float v = low + (high - low) * u;
    if (element == 0) {
      static_cast<float*>(data)[i] = v;
    } else if (element == 1) {
      const std::uint32_t bits = __float_as_uint(v);
      static_cast<std::uint16_t*>(data)[i] = static_cast<std::uint16_t>(bits >> 16);  // a bfloat16
    } else {
      static_cast<double*>(data)[i] = static_cast<double>(v) + static_cast<double>(u) * 1e-9;
    }
  }
}

__global__ void count_differences(const unsigned char* a, const unsigned char* b, std::size_t bytes,
                                  unsigned long long* differences) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    local += a[i] != b[i] ? 1 : 0;
  }
  if (local != 0) atomicAdd(differences, local);
}

int element_code(Element e) { return e == Element::f32 ? 0 : e == Element::bf16 ? 1 : 2; }

void fill(void* data, std::size_t count, Element e, std::uint64_t seed, float low, float high) {
  fill_kernel<<<4096, 256>>>(data, count, element_code(e), seed, low, high);
  CHECK(cudaGetLastError());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct Summary {
  double copy_gbps, base_x, base_lo, base_hi, current_x, current_lo, current_hi, ratio, ratio_lo, ratio_hi, ratio_even,
      ratio_odd;
  unsigned long long differences;
};

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(2, std::atoi(argv[1])) : 21;
  constexpr int kWarmups = 3;
  int device = 0;
  CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("compare_headers: %s, %d reps per case (+%d warm-ups), orders copy/base/current and reversed\n",
              prop.name, reps, kWarmups);

  // Buffers for the largest case: two inputs, two outputs (base, current), the copy's two ends.
  std::size_t array_bytes = 0, copy_bytes_max = 0, vector_bytes = 0;
  for (const CaseSpec& c : kCases) {
    const std::size_t bytes = c.n * element_bytes(c.element);
    array_bytes = std::max(array_bytes, bytes);
    copy_bytes_max = std::max(copy_bytes_max, bytes * static_cast<std::size_t>(c.full_inputs + 1) / 2);
    vector_bytes = std::max(vector_bytes, c.vector_length * element_bytes(c.element));
  }
  const std::size_t pad = 256;
  unsigned char *in0, *in1, *out_base, *out_current, *copy_from, *copy_to, *v0, *v1;
  CHECK(cudaMalloc(&in0, array_bytes + pad));
  CHECK(cudaMalloc(&in1, array_bytes + pad));
  CHECK(cudaMalloc(&out_base, array_bytes + pad));
  CHECK(cudaMalloc(&out_current, array_bytes + pad));
  CHECK(cudaMalloc(&copy_from, copy_bytes_max));
  CHECK(cudaMalloc(&copy_to, copy_bytes_max));
  CHECK(cudaMalloc(&v0, vector_bytes + pad));
  CHECK(cudaMalloc(&v1, vector_bytes + pad));
  CHECK(cudaMemset(copy_from, 0x3c, copy_bytes_max));
  unsigned long long* differences;
  CHECK(cudaMalloc(&differences, sizeof(unsigned long long)));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t marks[6];
  for (cudaEvent_t& e : marks) CHECK(cudaEventCreate(&e));

  bool all_identical = true;
  std::vector<Summary> summaries;
  for (int index = 0; index < kCaseCount; ++index) {
    const CaseSpec& c = kCases[index];
    const std::size_t esize = element_bytes(c.element);
    const std::size_t bytes = c.n * esize;
    const std::size_t copy_bytes = bytes * static_cast<std::size_t>(c.full_inputs + 1) / 2;
    fill(in0, c.n + c.in_offset, c.element, 0x5eed0001u + index, -6.0f, 6.0f);
    fill(in1, c.n, c.element, 0x5eed0002u + index, -6.0f, 6.0f);
    fill(v0, c.vector_length, c.element, 0x5eed0003u + index, 0.5f, 1.5f);
    fill(v1, c.vector_length, c.element, 0x5eed0004u + index, -1.0f, 1.0f);
    CHECK(cudaDeviceSynchronize());

    const auto pointers = [&](unsigned char* out) {
      Pointers p{in0 + c.in_offset * esize, in1, v0, v1, out};
      if (c.in_place) p.in0 = out;
      return p;
    };
    // Results: both sides from the same inputs (the in-place case from copies of x).
    // On `stream`: a device-to-device cudaMemcpy does not wait for completion, and the non-blocking
    // stream does not wait for the legacy default stream, so the launches could read a half copy.
    for (unsigned char* out : {out_base, out_current}) {
      if (c.in_place) CHECK(cudaMemcpyAsync(out, in0, bytes, cudaMemcpyDeviceToDevice, stream));
    }
    CHECK(side_base::launch_case(index, pointers(out_base), stream));
    CHECK(side_current::launch_case(index, pointers(out_current), stream));
    CHECK(cudaMemsetAsync(differences, 0, sizeof(unsigned long long), stream));
    count_differences<<<4096, 256, 0, stream>>>(out_base, out_current, bytes, differences);
    CHECK(cudaGetLastError());
    unsigned long long differing = 0;
    CHECK(cudaMemcpyAsync(&differing, differences, sizeof(differing), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    if (differing != 0) all_identical = false;

    // Timing, interleaved.
    std::vector<double> base_x, current_x, ratio, ratio_even, ratio_odd, copy_ms;
    for (int rep = -kWarmups; rep < reps; ++rep) {
      const bool reversed = (rep & 1) != 0;
      float ms[3] = {};
      for (int k = 0; k < 3; ++k) {
        const int which = reversed ? 2 - k : k;  // 0 copy, 1 base, 2 current
        CHECK(cudaEventRecord(marks[2 * which], stream));
        if (which == 0) {
          CHECK(cudaMemcpyAsync(copy_to, copy_from, copy_bytes, cudaMemcpyDeviceToDevice, stream));
        } else if (which == 1) {
          CHECK(side_base::launch_case(index, pointers(out_base), stream));
        } else {
          CHECK(side_current::launch_case(index, pointers(out_current), stream));
        }
        CHECK(cudaEventRecord(marks[2 * which + 1], stream));
      }
      CHECK(cudaStreamSynchronize(stream));
      for (int which = 0; which < 3; ++which) CHECK(cudaEventElapsedTime(&ms[which], marks[2 * which], marks[2 * which + 1]));
      if (rep < 0) continue;
      copy_ms.push_back(ms[0]);
      base_x.push_back(ms[0] / ms[1]);
      current_x.push_back(ms[0] / ms[2]);
      ratio.push_back(static_cast<double>(ms[1]) / ms[2]);
      (reversed ? ratio_odd : ratio_even).push_back(static_cast<double>(ms[1]) / ms[2]);
    }
    const auto lo = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
    const auto hi = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
    Summary s{2.0 * copy_bytes / (median(copy_ms) * 1e-3) / 1e9,
              median(base_x), lo(base_x), hi(base_x),
              median(current_x), lo(current_x), hi(current_x),
              median(ratio), lo(ratio), hi(ratio),
              median(ratio_even), median(ratio_odd), differing};
    summaries.push_back(s);
    std::printf("%-32s n=%zu  x copy: base %.4f [%.4f-%.4f]  current %.4f [%.4f-%.4f]  current/base %.4f [%.4f-%.4f] "
                "(even %.4f, odd %.4f)  differing bytes %llu\n",
                c.name, c.n, s.base_x, s.base_lo, s.base_hi, s.current_x, s.current_lo, s.current_hi, s.ratio,
                s.ratio_lo, s.ratio_hi, s.ratio_even, s.ratio_odd, s.differences);
    std::fflush(stdout);
  }

  std::printf("\n| case | copy GB/s | base x copy | current x copy | current/base (even, odd reps) | outputs |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (int index = 0; index < kCaseCount; ++index) {
    const Summary& s = summaries[static_cast<std::size_t>(index)];
    std::printf("| %s | %.0f | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) | %.3f (%.3f, %.3f) | %s |\n", kCases[index].name,
                s.copy_gbps, s.base_x, s.base_lo, s.base_hi, s.current_x, s.current_lo, s.current_hi, s.ratio,
                s.ratio_even, s.ratio_odd, s.differences == 0 ? "identical" : "DIFFER");
  }
  std::printf("%s\n", all_identical ? "every output bit-identical between base and current"
                                    : "OUTPUTS DIFFER between base and current");
  return all_identical ? 0 : 1;
}
