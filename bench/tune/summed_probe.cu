// The probe of the summing path's knobs (docs/TUNING.md#summing-path): the rows of the summing
// benchmark (bench_summed.cu: a folded BatchNorm + HardSwish whose output holds per-(n, c) sums,
// MobileNetV3-Large's squeeze-excitation inputs at batch 64 and one at batch 512). Each rep times,
// in turn (the order reversed every other rep), cudaMemcpyAsync of x into y, the plain transform
// and the summing call; it prints medians × copy and the paired summing / plain time. The knobs are
// macros (HARDACT_SUMMED_VECTORS_IN_FLIGHT, HARDACT_SUMMED_MIN_BLOCKS, ...), so the probe is built
// once per setting and the builds are run in alternating order; each prints a hash of y (the same
// for every setting) and of the sums (the same where the setting keeps the order of the additions).
// Not part of any CMake target; built by hand against a tree:
//   nvcc -std=c++17 -O3 -Iinclude -gencode=arch=compute_90,code=sm_90 [-DHARDACT_SUMMED_...]
//        bench/tune/summed_probe.cu -o summed_probe && ./summed_probe [reps [text a row's label holds]]
#include <hardact/hardact.cuh>

#include "probe_support.cuh"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

using probe::quantile;
using probe::time_ms;

namespace {

/// Finite values in [-8, 8) (sums of NaN would hide a difference), from a fixed seed.
template <class T>
void fill_values(T* device, std::size_t n, std::uint64_t seed) {
  std::vector<T> host(n);
  std::uint64_t s = seed;
  for (std::size_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    host[i] = static_cast<T>(static_cast<float>(static_cast<double>(s >> 40) / 1048576.0 - 8.0));
  }
  CHECK(cudaMemcpy(device, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
}

std::uint64_t hash_bytes(const void* device, std::size_t bytes) {
  std::vector<unsigned char> host(bytes);
  CHECK(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost));
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : host) h = (h ^ c) * 1099511628211ull;
  return h;
}

template <class T>
void row(const char* type_name, bool nchw, std::size_t batch, std::size_t channels, std::size_t side, int reps,
         const char* only) {
  char label[64];
  std::snprintf(label, sizeof label, "%s %-4s %4zux%4zux%2zux%2zu", nchw ? "NCHW" : "NHWC", type_name, batch,
                nchw ? channels : side, side, nchw ? side : channels);
  if (only != nullptr && std::strstr(label, only) == nullptr) return;
  const std::size_t positions = side * side, n = batch * channels * positions, planes = batch * channels;
  const std::size_t bytes = n * sizeof(T);
  T *x, *y;
  float *scale, *shift, *sums;
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&y, bytes));
  CHECK(cudaMalloc(&scale, channels * sizeof(float)));
  CHECK(cudaMalloc(&shift, channels * sizeof(float)));
  CHECK(cudaMalloc(&sums, planes * sizeof(float)));
  fill_values(x, n, 1);
  fill_values(scale, channels, 2);
  fill_values(shift, channels, 3);
  const std::size_t inner = nchw ? positions : 1;
  const auto op = hardact::scale_shift_activation(hardact::HardSwish{});
  const auto scales = hardact::per_channel(static_cast<const float*>(scale), channels, inner);
  const auto shifts = hardact::per_channel(static_cast<const float*>(shift), channels, inner);
  auto output = nchw ? hardact::with_channel_sums(y, sums, planes, positions)
                     : hardact::with_sample_channel_sums(y, sums, channels, positions);
  const std::size_t temp_bytes = hardact::temp_storage_bytes(output, n);
  void* temp = nullptr;
  if (temp_bytes > 0) CHECK(cudaMalloc(&temp, temp_bytes));
  output.temp_storage = temp;
  output.temp_storage_bytes = temp_bytes;
  const T* in = x;
  CHECK(cudaMemset(sums, 0xff, planes * sizeof(float)));
  CHECK(hardact::transform(op, in, scales, shifts, output, n));
  const std::uint64_t y_hash = hash_bytes(y, bytes), sums_hash = hash_bytes(sums, planes * sizeof(float));

  std::vector<float> copy, plain, summing, paired;
  const std::function<cudaError_t()> contenders[3] = {
      [&] { return cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); },
      [&] { return hardact::transform(op, in, scales, shifts, y, n); },
      [&] { return hardact::transform(op, in, scales, shifts, output, n); }};
  std::vector<float>* results[3] = {&copy, &plain, &summing};
  for (int k = 0; k < 3; ++k) CHECK(contenders[k]());  // warm-up
  for (int rep = 0; rep < reps; ++rep) {
    for (int k = 0; k < 3; ++k) {
      const int which = rep % 2 == 0 ? k : 2 - k;
      results[which]->push_back(time_ms(contenders[which]));
    }
    paired.push_back(summing.back() / plain.back());
  }
  const double c_ms = quantile(copy, 0.5);
  std::printf("%s  copy %6.2f us  plain %.3f x copy  summing %.3f  summing/plain %.3f (%.3f-%.3f)"
              "  y %016llx sums %016llx\n",
              label, 1000 * c_ms, c_ms / quantile(plain, 0.5), c_ms / quantile(summing, 0.5), quantile(paired, 0.5),
              quantile(paired, 0.25), quantile(paired, 0.75), static_cast<unsigned long long>(y_hash),
              static_cast<unsigned long long>(sums_hash));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(scale));
  CHECK(cudaFree(shift));
  CHECK(cudaFree(sums));
  if (temp != nullptr) CHECK(cudaFree(temp));
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 31;
  const char* only = argc > 2 ? argv[2] : nullptr;  // rows whose label holds this text ("NCHW bf16")
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d reps a contender, vectors in flight %d, least blocks %d\n", prop.name, reps,
              hardact::detail::kSummedVectorsInFlight, hardact::detail::kSummedMinBlocks);
  struct Shape {
    std::size_t batch, channels, side;
  };
  const Shape shapes[] = {{64, 72, 28}, {64, 672, 14}, {64, 960, 7}, {512, 120, 28}};
  for (const bool nchw : {false, true}) {
    for (const Shape& s : shapes) {
      row<float>("f32", nchw, s.batch, s.channels, s.side, reps, only);
      row<__nv_bfloat16>("bf16", nchw, s.batch, s.channels, s.side, reps, only);
    }
  }
}
