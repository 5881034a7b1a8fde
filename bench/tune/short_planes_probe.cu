// The probe of the direct path's half-width vectors for broadcast runs that are whole half vectors
// but not whole vectors (docs/TUNING.md#broadcast-access): NCHW folded BatchNorm + HardSwish with
// float scale and shift, and a per-(n, c) HardSigmoid gate, at MobileNetV3's short planes. Each rep
// times, in turn (the order reversed every other rep), cudaMemcpyAsync of x into y, the call with
// the rule (`half`), the call with half-width vectors off (`full`), and the floor (an empty kernel's
// launch, then the copy). Before timing, each row's two outputs are compared byte for byte on
// varied data. Not part of any CMake target; built by hand against a tree:
//   nvcc -std=c++17 -O3 -Iinclude -DHARDACT_TESTING_OVERRIDES -gencode=arch=compute_90,code=sm_90 \
//        bench/tune/short_planes_probe.cu -o short_planes_probe && ./short_planes_probe [reps]
#include <hardact/hardact.cuh>

#include "probe_support.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using probe::quantile;
using probe::time_ms;

namespace {

__global__ void empty_kernel() {}

void fill_varied(void* device, std::size_t bytes, unsigned seed) {
  std::vector<unsigned char> host(bytes);
  for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(((i + seed) * 2654435761u) >> 13);
  CHECK(cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice));
}

template <class T>
void row(const char* type_name, const char* form, std::size_t batch, std::size_t channels, std::size_t plane,
         int reps) {
  const std::size_t n = batch * channels * plane, bytes = n * sizeof(T);
  const bool gate = std::string(form) == "gate";
  const std::size_t values = gate ? batch * channels : channels;
  T *x, *y, *z;
  float *s, *b;
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&y, bytes));
  CHECK(cudaMalloc(&z, bytes));
  CHECK(cudaMalloc(&s, values * sizeof(float)));
  CHECK(cudaMalloc(&b, values * sizeof(float)));
  const auto bn = hardact::scale_shift_activation(hardact::HardSwish{});
  const auto call = [&](T* out) -> cudaError_t {
    if (gate) return hardact::transform(hardact::HardSigmoidGate{}, (const T*)x, hardact::per_channel((const float*)s, values, plane), out, n);
    return hardact::transform(bn, (const T*)x, hardact::per_channel((const float*)s, channels, plane),
                              hardact::per_channel((const float*)b, channels, plane), out, n);
  };
  auto& half_width = hardact::detail::transform_tuning().direct_half_width_runs;
  const auto with = [&](bool on, T* out) {
    half_width = on;
    const cudaError_t status = call(out);
    half_width = true;
    return status;
  };
  // The same bytes either way, on varied data (NaN patterns included: the bytes are arbitrary).
  fill_varied(x, bytes, 1);
  fill_varied(s, values * sizeof(float), 2);
  fill_varied(b, values * sizeof(float), 3);
  CHECK(cudaMemset(y, 0xff, bytes));
  CHECK(cudaMemset(z, 0x00, bytes));
  CHECK(with(true, y));
  CHECK(with(false, z));
  std::vector<unsigned char> a(bytes), c(bytes);
  CHECK(cudaMemcpy(a.data(), y, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(c.data(), z, bytes, cudaMemcpyDeviceToHost));
  const bool same = a == c;
  CHECK(cudaMemset(x, 0x3c, bytes));
  std::vector<float> copy, half, full, floor, paired;
  const std::function<cudaError_t()> contenders[4] = {
      [&] { return cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); },
      [&] { return with(true, y); },
      [&] { return with(false, y); },
      [&] {
        empty_kernel<<<1, 32>>>();
        return cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice);
      }};
  std::vector<float>* results[4] = {&copy, &half, &full, &floor};
  for (int k = 0; k < 4; ++k) CHECK(contenders[k]());  // warm-up
  for (int rep = 0; rep < reps; ++rep) {
    for (int k = 0; k < 4; ++k) {
      const int which = rep % 2 == 0 ? k : 3 - k;
      results[which]->push_back(time_ms(contenders[which]));
    }
    paired.push_back(half.back() / full.back());
  }
  const double c_ms = quantile(copy, 0.5);
  std::printf("%-5s %-4s %4zux%4zux%4zu  copy %7.2f us  half %.3f x copy  full %.3f  floor %.3f  half/full %.3f (%.3f-%.3f)  %s\n",
              type_name, form, batch, channels, plane, 1000 * c_ms, c_ms / quantile(half, 0.5),
              c_ms / quantile(full, 0.5), c_ms / quantile(floor, 0.5), quantile(paired, 0.5), quantile(paired, 0.25),
              quantile(paired, 0.75), same ? "same bytes" : "DIFFERENT BYTES");
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(z));
  CHECK(cudaFree(s));
  CHECK(cudaFree(b));
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 31;
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d reps a contender\n", prop.name, reps);
  if (const char* batches = std::getenv("PROBE_BATCHES")) {  // the small calls: "1,2,4"
    for (const char* form : {"bn", "gate"}) {
      for (const char* p = batches; *p != '\0';) {
        char* end = nullptr;
        const std::size_t batch = std::strtoull(p, &end, 10);
        row<__nv_bfloat16>("bf16", form, batch, 672, 14 * 14, reps);
        row<__nv_bfloat16>("bf16", form, batch, 80, 14 * 14, reps);
        row<float>("f32", form, batch, 672, 7 * 14, reps);
        row<double>("f64", form, batch, 960, 7 * 7, reps);
        p = *end == ',' ? end + 1 : end;
      }
    }
    return 0;
  }
  for (const char* form : {"bn", "gate"}) {
    row<__nv_bfloat16>("bf16", form, 64, 672, 14 * 14, reps);
    row<__half>("half", form, 64, 672, 14 * 14, reps);
    row<__nv_bfloat16>("bf16", form, 32, 672, 14 * 14, reps);
    row<__nv_bfloat16>("bf16", form, 128, 672, 14 * 14, reps);
    row<__nv_bfloat16>("bf16", form, 64, 240, 10 * 10, reps);
    row<__nv_bfloat16>("bf16", form, 64, 960, 7 * 7, reps);
    row<__nv_bfloat16>("bf16", form, 64, 72, 28 * 28, reps);
    row<float>("f32", form, 64, 672, 7 * 14, reps);
    row<float>("f32", form, 64, 672, 14 * 14, reps);
    row<double>("f64", form, 64, 960, 7 * 7, reps);
    row<double>("f64", form, 64, 672, 14 * 14, reps);
  }
}
