// bf16_gemm_bench: f32 vs bf16 mixed precision for DeepFM's MLP GEMMs.
//
// For the model's shapes (docs/model.md: MLP input F*K, hidden 400-400-400,
// output 1; batch B) and for 1 thread and all threads it measures, through
// ctrain::model::FullyConnected (the code a training step runs, so bf16 times
// include rounding X, W and dY to bf16):
//   kind "layer":      Forward (2·B·in·out FLOP) and Backward with diff_src
//                      (4·B·in·out FLOP) per layer, GFLOP/s;
//   kind "mlp":        the whole MLP sequence (every layer forward, then every
//                      layer backward), GFLOP/s and the roofline examples/s it allows;
//   kind "convert":    ConvertF32ToBf16 throughput on B*(F*K) values (GB/s of f32 read);
//   kind "train_step": DeepFM::TrainStep examples/s (same batch every step,
//                      dropout 0.5, no BN), mean and best over the run.
// Each measurement is the best (or mean, where said) of repetitions over about
// --seconds of wall time. Output: one JSON object per line, e.g.
//   {"bench":"bf16_gemm","kind":"mlp","dtype":"bf16","threads":1,"gflops":..,"roofline_examples_per_sec":..}
// bf16 lines are skipped (one "skipped" line says why) when the CPU lacks AVX512_BF16.
//
// Usage: bf16_gemm_bench [--batch 1024] [--fields 39] [--embedding 32]
//                        [--layers 400,400,400] [--threads N] [--seconds 1] [--no-train-step]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ctrain/data/batch.h"
#include "ctrain/model/deepfm.h"
#include "ctrain/model/layers/bf16.h"
#include "ctrain/model/layers/fully_connected.h"

namespace {

using ctrain::model::DataType;
using ctrain::model::DataTypeName;
using Clock = std::chrono::steady_clock;

std::vector<int32_t> ParseLayers(const char* s) {
  std::vector<int32_t> out;
  while (*s) {
    char* end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (end == s || v <= 0) {
      std::fprintf(stderr, "bf16_gemm_bench: bad --layers '%s'\n", s);
      std::exit(2);
    }
    out.push_back(static_cast<int32_t>(v));
    s = (*end == ',') ? end + 1 : end;
  }
  return out;
}

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Best seconds per call of f over about `seconds` (at least 3 calls, after 2 warm-ups).
template <typename F>
double BestSeconds(F&& f, double seconds) {
  f();
  f();
  double best = 1e30;
  const auto start = Clock::now();
  int reps = 0;
  do {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    ++reps;
  } while (reps < 3 || std::chrono::duration<double>(Clock::now() - start).count() < seconds);
  return best;
}

void Die(const ctrain::Status& s) {
  std::fprintf(stderr, "bf16_gemm_bench: %s\n", s.ToString().c_str());
  std::exit(1);
}

struct Layer {
  int64_t in, out;
  std::vector<float> x, w, b, y, dy, dx, dw, db;
};

void BenchGemms(int64_t B, const std::vector<int64_t>& dims, DataType type, int threads, double seconds) {
  omp_set_num_threads(threads);
  std::vector<Layer> layers;
  std::vector<ctrain::model::FullyConnected> fcs;
  for (size_t l = 0; l + 1 < dims.size(); ++l) {
    Layer L;
    L.in = dims[l];
    L.out = dims[l + 1];
    L.x = Random(B * L.in, 1 + l);
    L.w = Random(L.in * L.out, 100 + l);
    L.b = Random(L.out, 200 + l);
    L.dy = Random(B * L.out, 300 + l);
    L.y.resize(B * L.out);
    L.dx.resize(B * L.in);
    L.dw.resize(L.in * L.out);
    L.db.resize(L.out);
    layers.push_back(std::move(L));
    fcs.emplace_back(dims[l], dims[l + 1], type);
    ctrain::Status s = fcs.back().Prepare(B);
    if (!s.ok()) Die(s);
  }
  double mlp_flop = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    Layer& L = layers[l];
    auto& fc = fcs[l];
    const double f = 2.0 * B * L.in * L.out;
    mlp_flop += 3 * f;
    const double tf = BestSeconds([&] { fc.Forward(B, L.x.data(), L.w.data(), L.b.data(), L.y.data()); }, seconds / 4);
    const double tb = BestSeconds(
        [&] { fc.Backward(B, L.x.data(), L.w.data(), L.dy.data(), L.dx.data(), L.dw.data(), L.db.data()); },
        seconds / 4);
    std::printf(
        "{\"bench\":\"bf16_gemm\",\"kind\":\"layer\",\"dtype\":\"%s\",\"threads\":%d,\"layer\":%zu,\"batch\":%lld,"
        "\"in\":%lld,\"out\":%lld,\"fwd_gflops\":%.1f,\"bwd_gflops\":%.1f,\"fwd_us\":%.0f,\"bwd_us\":%.0f}\n",
        DataTypeName(type), threads, l, static_cast<long long>(B), static_cast<long long>(L.in),
        static_cast<long long>(L.out), f / tf / 1e9, 2 * f / tb / 1e9, tf * 1e6, tb * 1e6);
  }
  const double t = BestSeconds(
      [&] {
        for (size_t l = 0; l < layers.size(); ++l)
          fcs[l].Forward(B, layers[l].x.data(), layers[l].w.data(), layers[l].b.data(), layers[l].y.data());
        for (size_t l = layers.size(); l-- > 0;) {
          Layer& L = layers[l];
          fcs[l].Backward(B, L.x.data(), L.w.data(), L.dy.data(), L.dx.data(), L.dw.data(), L.db.data());
        }
      },
      seconds);
  const double gflops = mlp_flop / t / 1e9;
  std::printf(
      "{\"bench\":\"bf16_gemm\",\"kind\":\"mlp\",\"dtype\":\"%s\",\"threads\":%d,\"batch\":%lld,"
      "\"mflop_per_example\":%.4f,\"ms_per_batch\":%.2f,\"gflops\":%.1f,\"roofline_examples_per_sec\":%.0f}\n",
      DataTypeName(type), threads, static_cast<long long>(B), mlp_flop / B / 1e6, t * 1e3, gflops,
      B / t);
  std::fflush(stdout);
}

void BenchConvert(int64_t n, int threads, double seconds) {
  omp_set_num_threads(threads);
  const std::vector<float> src = Random(n, 7);
  std::vector<uint16_t> dst(n);
  const double t = BestSeconds([&] { ctrain::model::ConvertF32ToBf16(src.data(), dst.data(), n); }, seconds / 2);
  std::printf(
      "{\"bench\":\"bf16_gemm\",\"kind\":\"convert\",\"threads\":%d,\"values\":%lld,\"us\":%.0f,"
      "\"gb_per_sec_f32_read\":%.1f}\n",
      threads, static_cast<long long>(n), t * 1e6, 4.0 * n / t / 1e9);
}

void BenchTrainStep(int64_t B, int32_t F, int32_t K, const std::vector<int32_t>& hidden, DataType type, int threads,
                    double seconds) {
  omp_set_num_threads(threads);
  ctrain::model::DeepFMConfig c;
  c.feature_size = 200000;
  c.field_size = F;
  c.embedding_size = K;
  c.deep_layers = hidden;
  c.dropout = 0.5f;
  c.gemm_dtype = type;
  ctrain::model::DeepFM m(c);
  if (!m.status().ok()) Die(m.status());
  std::mt19937 rng(5);
  ctrain::data::Batch batch;
  batch.field_size = F;
  std::vector<int64_t> ids(F);
  std::vector<float> vals(F, 1.0f);
  for (int64_t b = 0; b < B; ++b) {
    for (int32_t f = 0; f < F; ++f) ids[f] = rng() % c.feature_size;
    batch.AppendRow(static_cast<float>(rng() % 2), ids, vals);
  }
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  ctrain::model::UniqueIds(batch, &u, &idx);
  const std::vector<float> w_rows = Random(u.size(), 11), v_rows = Random(u.size() * K, 12);
  ctrain::model::SparseGrad wg, vg;
  ctrain::model::LossTerms loss;
  int64_t step = 0;
  auto run = [&] {
    ctrain::Status s = m.TrainStep(batch, u, idx, w_rows.data(), v_rows.data(), step++, &wg, &vg, &loss);
    if (!s.ok()) Die(s);
  };
  run();
  run();
  double best = 1e30, total = 0;
  int reps = 0;
  const auto start = Clock::now();
  do {
    const auto t0 = Clock::now();
    run();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, dt);
    total += dt;
    ++reps;
  } while (reps < 3 || std::chrono::duration<double>(Clock::now() - start).count() < seconds);
  std::printf(
      "{\"bench\":\"bf16_gemm\",\"kind\":\"train_step\",\"dtype\":\"%s\",\"threads\":%d,\"batch\":%lld,"
      "\"steps\":%d,\"mean_ms\":%.2f,\"best_ms\":%.2f,\"examples_per_sec_mean\":%.0f,"
      "\"examples_per_sec_best\":%.0f,\"loss\":%.6f}\n",
      DataTypeName(type), threads, static_cast<long long>(B), reps, total / reps * 1e3, best * 1e3,
      B * reps / total, B / best, loss.loss);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 1024;
  int32_t fields = 39, embedding = 32;
  std::vector<int32_t> layers = {400, 400, 400};
  int threads_all = omp_get_num_procs();
  double seconds = 1.0;
  bool train_step = true;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bf16_gemm_bench: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--batch")) batch = std::atol(next());
    else if (!std::strcmp(argv[i], "--fields")) fields = std::atoi(next());
    else if (!std::strcmp(argv[i], "--embedding")) embedding = std::atoi(next());
    else if (!std::strcmp(argv[i], "--layers")) layers = ParseLayers(next());
    else if (!std::strcmp(argv[i], "--threads")) threads_all = std::atoi(next());
    else if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(next());
    else if (!std::strcmp(argv[i], "--no-train-step")) train_step = false;
    else {
      std::fprintf(stderr,
                   "usage: bf16_gemm_bench [--batch B] [--fields F] [--embedding K] [--layers 400,400,400] "
                   "[--threads N] [--seconds S] [--no-train-step]\n");
      return 2;
    }
  }
  if (batch <= 0 || fields <= 0 || embedding <= 0 || threads_all <= 0) {
    std::fprintf(stderr, "bf16_gemm_bench: sizes and threads must be positive\n");
    return 2;
  }
  std::vector<int64_t> dims = {static_cast<int64_t>(fields) * embedding};
  dims.insert(dims.end(), layers.begin(), layers.end());
  dims.push_back(1);

  const ctrain::Status bf16 = ctrain::model::Bf16GemmSupported();
  std::printf("{\"bench\":\"bf16_gemm\",\"kind\":\"machine\",\"isa\":\"%s\",\"bf16\":%s,\"threads_all\":%d}\n",
              ctrain::model::DnnlCpuIsaName().c_str(), bf16.ok() ? "true" : "false", threads_all);
  if (!bf16.ok())
    std::printf("{\"bench\":\"bf16_gemm\",\"kind\":\"skipped\",\"dtype\":\"bf16\",\"why\":\"%s\"}\n",
                bf16.ToString().c_str());
  std::vector<int> thread_counts = {1};
  if (threads_all != 1) thread_counts.push_back(threads_all);
  std::vector<DataType> types = {DataType::kF32};
  if (bf16.ok()) types.push_back(DataType::kBF16);
  for (int t : thread_counts) {
    if (bf16.ok()) BenchConvert(batch * dims[0], t, seconds);
    for (DataType type : types) BenchGemms(batch, dims, type, t, seconds);
    if (train_step)
      for (DataType type : types) BenchTrainStep(batch, fields, embedding, layers, type, t, seconds * 2);
  }
  return 0;
}
