// The probe of the broadcast decisions (docs/TUNING.md#broadcast-access, #broadcast-units-per-thread,
// #broadcast-values-before-the-wait, #two-rows-per-tile, #direct-block-shape-with-broadcasts): hardact fused calls
// against cudaMemcpyAsync of the same bytes, interleaved rep by rep; bfloat16 x with float vectors (`bf16f`) is
// PyTorch's form, and the *_pt rows PyTorch bench_fused.py's NCHW shape (256, 1536, 64, 64). Not part of any CMake
// target (bench/CMakeLists.txt globs bench/*.cu only); built by hand against a tree, e.g.
//   nvcc -std=c++17 -O3 -Iinclude -DHARDACT_TESTING_OVERRIDES -gencode=arch=compute_90,code=sm_90 -DVARIANT='"name"' \
//        bench/tune/broadcast_probe.cu
// and run as `[PROBE_UNITS=1|2] [PROBE_BLOCKS=b PROBE_STAGES=s] [PROBE_PATH=direct|staged] [PROBE_ROWS=bn_nhwc,...]
//   [PROBE_TWO_ROWS=1|-1 (StagedLoop::two_rows wherever a call can take it, or never)]
//   ./a.out [reps] [bf16|float|bf16f|both|all]`. A half/bfloat16 broadcast call has 4-unit kernels only
// (TUNING.md#broadcast-units-per-thread), so PROBE_UNITS=1|2 leaves it at 4; build with
// -DHARDACT_STAGED_BROADCAST_UNITS=2 for 2.
// With PROBE_VERIFY=1 each row runs once, on varied data, and its output is compared byte for byte with the
// direct path's instead of timed (with PROBE_PATH=staged and a small PROBE_BATCH such as 32).
#include <hardact/hardact.cuh>
#include <cuda_bf16.h>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <cstdio>
#include <string>
#include <vector>
#ifndef VARIANT
#define VARIANT "?"
#endif
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("error %s at %d\n", cudaGetErrorName(e_), __LINE__); std::exit(1);} } while (0)
constexpr std::size_t C = 96, HW = 56 * 56;
// The batch, PROBE_BATCH (default 5350: 1.6e9 elements; 32 is the benchmark's mid size).
const std::size_t B = std::getenv("PROBE_BATCH") ? std::strtoull(std::getenv("PROBE_BATCH"), nullptr, 10) : 5350;
const std::size_t N = B * C * HW;
constexpr std::size_t C_PT = 1536, HW_PT = 64 * 64, N_PT = 256 * C_PT * HW_PT;  // run where N >= N_PT
template <class F> float time_ms(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  cudaEventRecord(a); CHECK(f()); cudaEventRecord(b); cudaEventSynchronize(b);
  float ms; cudaEventElapsedTime(&ms, a, b); cudaEventDestroy(a); cudaEventDestroy(b); return ms;
}
float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
std::string shape_name() {
  std::string name;
  for (const char* v : {"PROBE_TWO_ROWS", "PROBE_PATH", "PROBE_UNITS", "PROBE_BLOCKS", "PROBE_STAGES"}) {
    if (const char* value = std::getenv(v)) name += std::string(v + 6, 1) + value;
  }
  return name.empty() ? "rule" : name;
}
template <class T, class V = T> void rows(const char* tname, int reps) {
  T *x, *y, *r;
  V *s, *b;
  CHECK(cudaMalloc(&x, N * sizeof(T))); CHECK(cudaMalloc(&y, N * sizeof(T))); CHECK(cudaMalloc(&r, N * sizeof(T)));
  CHECK(cudaMalloc(&s, 8 * C * B * sizeof(V))); CHECK(cudaMalloc(&b, 8 * C * B * sizeof(V)));
  CHECK(cudaMemset(x, 0x3c, N * sizeof(T))); CHECK(cudaMemset(r, 0x3c, N * sizeof(T)));
  CHECK(cudaMemset(s, 0x3c, 8 * C * B * sizeof(V))); CHECK(cudaMemset(b, 0x3c, 8 * C * B * sizeof(V)));
  if (std::getenv("PROBE_VERIFY")) {  // varied values, so that a wrong index shows
    const auto fill = [](void* device, std::size_t bytes, unsigned seed) {
      std::vector<unsigned char> host(bytes);
      for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(((i + seed) * 2654435761u) >> 13);
      CHECK(cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice));
    };
    fill(x, N * sizeof(T), 1); fill(r, N * sizeof(T), 2);
    fill(s, 8 * C * B * sizeof(V), 3); fill(b, 8 * C * B * sizeof(V), 4);
  }
  const auto bn = hardact::scale_shift_activation(hardact::HardSwish{});
  const auto bias = hardact::bias_activation(hardact::HardSwish{});
  struct Row { std::string name; int full; std::function<cudaError_t()> f; std::size_t n = N; };
  std::vector<Row> list = {
    {"bn_nchw", 1, [&] { return hardact::transform(bn, (const T*)x, hardact::per_channel((const V*)s, C, HW), hardact::per_channel((const V*)b, C, HW), y, N); }},
    {"bn_nhwc", 1, [&] { return hardact::transform(bn, (const T*)x, hardact::per_channel((const V*)s, C), hardact::per_channel((const V*)b, C), y, N); }},
    {"bias_nchw", 1, [&] { return hardact::transform(bias, (const T*)x, hardact::per_channel((const V*)s, C, HW), y, N); }},
    {"bias_lastdim", 1, [&] { return hardact::transform(bias, (const T*)x, hardact::per_channel((const V*)s, 393216), y, N / 393216 * 393216); }, N / 393216 * 393216},
    {"gate_nchw", 1, [&] { return hardact::transform(hardact::HardSigmoidGate{}, (const T*)x, hardact::per_channel((const V*)s, B * C, HW), y, N); }},
    {"bn_nchw_pt", 1, [&] { return hardact::transform(bn, (const T*)x, hardact::per_channel((const V*)s, C_PT, HW_PT), hardact::per_channel((const V*)b, C_PT, HW_PT), y, N_PT); }, N_PT},
    {"bn_nhwc_pt", 1, [&] { return hardact::transform(bn, (const T*)x, hardact::per_channel((const V*)s, C_PT), hardact::per_channel((const V*)b, C_PT), y, N_PT); }, N_PT},
    {"residual", 2, [&] { return hardact::transform(hardact::residual_activation(hardact::HardSwish{}), (const T*)x, (const T*)r, y, N); }},
  };
  const char* only = std::getenv("PROBE_ROWS");  // a substring of the rows to run
  for (auto& row : list) {
    if (only != nullptr && std::string(only).find(row.name) == std::string::npos) continue;
    if (row.n > N) continue;
    if (std::getenv("PROBE_VERIFY")) CHECK(cudaMemset(y, 0xff, row.n * sizeof(T)));
    CHECK(row.f()); CHECK(cudaDeviceSynchronize());
    if (std::getenv("PROBE_VERIFY")) {  // the same bytes as the direct path's
      std::vector<unsigned char> got(row.n * sizeof(T)), want(row.n * sizeof(T));
      CHECK(cudaMemcpy(got.data(), y, got.size(), cudaMemcpyDeviceToHost));
      CHECK(cudaMemset(y, 0xff, got.size()));
      {
        hardact::detail::ScopedTransformPath direct(hardact::detail::TransformPath::direct);
        CHECK(row.f());
      }
      CHECK(cudaMemcpy(want.data(), y, want.size(), cudaMemcpyDeviceToHost));
      std::printf("%-8s %-6s %-13s verify %s\n", VARIANT, tname, row.name.c_str(), got == want ? "same" : "DIFFERENT");
      continue;
    }
    const std::size_t bytes = row.n * sizeof(T);
    std::vector<float> copy, fused;
    for (int rep = 0; rep < reps; ++rep) {
      auto c = [&] { return cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); };
      if (rep % 2 == 0) { copy.push_back(time_ms(c)); fused.push_back(time_ms(row.f)); }
      else { fused.push_back(time_ms(row.f)); copy.push_back(time_ms(c)); }
    }
    // The copy moves 2 N elements; the call moves (full + 1) N: the copy time is scaled to the same bytes.
    const double copy_ms = median(copy) * double(row.full + 1) / 2.0;
    std::vector<float> ratios; for (int i = 0; i < reps; ++i) ratios.push_back(float(copy[i] * (row.full + 1) / 2.0 / fused[i]));
    std::sort(ratios.begin(), ratios.end());
    std::printf("%-8s %-14s %-6s %-13s copy %.3f ms fused %.3f ms  x copy %.3f (q1 %.3f q3 %.3f)\n", VARIANT, shape_name().c_str(), tname, row.name.c_str(),
                copy_ms, median(fused), copy_ms / median(fused), ratios[reps / 4], ratios[3 * reps / 4]);
  }
  cudaFree(x); cudaFree(y); cudaFree(r); cudaFree(s); cudaFree(b);
}
int main(int argc, char** argv) {
  auto& tuning = hardact::detail::transform_tuning();
  if (const char* u = std::getenv("PROBE_UNITS")) tuning.staged_units_per_thread = std::atoi(u);
  if (const char* b = std::getenv("PROBE_BLOCKS")) tuning.staged_blocks_per_multiprocessor = std::atoi(b);
  if (const char* s = std::getenv("PROBE_STAGES")) tuning.staged_stages = std::atoi(s);
  if (const char* p = std::getenv("PROBE_TWO_ROWS")) tuning.staged_two_rows = std::atoi(p);
  if (const char* p = std::getenv("PROBE_PATH")) {
    tuning.path = std::string(p) == "direct" ? hardact::detail::TransformPath::direct : hardact::detail::TransformPath::staged;
  }
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  const std::string which = argc > 2 ? argv[2] : "both";
  if (which == "bf16" || which == "both" || which == "all") rows<__nv_bfloat16>("bf16", reps);
  if (which == "bf16f" || which == "all") rows<__nv_bfloat16, float>("bf16f", reps);
  if (which == "float" || which == "both" || which == "all") rows<float>("f32", reps);
}
