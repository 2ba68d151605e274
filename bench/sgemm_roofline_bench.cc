// sgemm_roofline_bench: the compute ceiling of DeepFM training on this machine.
//
// Measures oneDNN's dnnl_sgemm GFLOP/s on exactly the GEMMs one DeepFM training
// step runs (docs/model.md): with batch B, embedding K and field count F the MLP
// input is F*K wide, and for deep layers 400-400-400 the forward GEMMs are
//   [B, F*K] x [F*K, 400], [B,400] x [400,400] (twice), [B,400] x [400,1]
// and the backward pass runs, per layer, dX = dY W^T and dW = X^T dY.
// Total = 3 x 2 x sum(in*out) FLOP per example = 4.92 MFLOP for F=39, K=32.
//
// It times the whole step's GEMM sequence with 1 thread and with all threads
// (omp_get_num_procs(), or --threads N), and prints one JSON object:
//   {"batch":1024,"mflop_per_example":4.92,"shapes":[...],
//    "threads_1":{"gflops":..,"roofline_examples_per_sec":..},
//    "threads_all":{"threads":N,"gflops":..,"roofline_examples_per_sec":..}}
// roofline examples/s = GFLOP/s / MFLOP-per-example * 1000: the rate a trainer
// would reach if GEMMs were all it did, at this GEMM efficiency.
//
// Usage: sgemm_roofline_bench [--batch 1024] [--fields 39] [--embedding 32]
//                             [--layers 400,400,400] [--threads N] [--seconds 2]
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct Gemm {
  char ta, tb;
  int64_t m, n, k;
  const char* what;
  int layer;
};

std::vector<int64_t> ParseLayers(const char* s) {
  std::vector<int64_t> out;
  while (*s) {
    char* end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (end == s || v <= 0) {
      std::fprintf(stderr, "sgemm_roofline_bench: bad --layers '%s'\n", s);
      std::exit(2);
    }
    out.push_back(v);
    s = (*end == ',') ? end + 1 : end;
  }
  return out;
}

struct Buffers {
  std::vector<float> a, b, c;
};

// Runs the list once. Row-major dnnl_sgemm: C[m,n] = op(A)[m,k] op(B)[k,n].
void RunOnce(const std::vector<Gemm>& gemms, std::vector<Buffers>& bufs) {
  for (size_t i = 0; i < gemms.size(); ++i) {
    const Gemm& g = gemms[i];
    Buffers& b = bufs[i];
    const int64_t lda = (g.ta == 'N') ? g.k : g.m;
    const int64_t ldb = (g.tb == 'N') ? g.n : g.k;
    dnnl_status_t st = dnnl_sgemm(g.ta, g.tb, g.m, g.n, g.k, 1.0f, b.a.data(), lda, b.b.data(), ldb,
                                  0.0f, b.c.data(), g.n);
    if (st != dnnl_success) {
      std::fprintf(stderr, "sgemm_roofline_bench: dnnl_sgemm failed (%d)\n", static_cast<int>(st));
      std::exit(1);
    }
  }
}

// Returns the best-of-repetitions GFLOP/s over ~`seconds` of wall time.
double Measure(const std::vector<Gemm>& gemms, std::vector<Buffers>& bufs, double flops, double seconds) {
  using Clock = std::chrono::steady_clock;
  RunOnce(gemms, bufs);  // warm-up: oneDNN JIT, page faults
  RunOnce(gemms, bufs);
  double best = 0;
  const auto start = Clock::now();
  int reps = 0;
  do {
    const auto t0 = Clock::now();
    RunOnce(gemms, bufs);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, flops / dt / 1e9);
    ++reps;
  } while (reps < 3 || std::chrono::duration<double>(Clock::now() - start).count() < seconds);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 1024, fields = 39, embedding = 32;
  std::vector<int64_t> layers = {400, 400, 400};
  int threads_all = omp_get_num_procs();
  double seconds = 2.0;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "sgemm_roofline_bench: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--batch")) batch = std::atol(next());
    else if (!std::strcmp(argv[i], "--fields")) fields = std::atol(next());
    else if (!std::strcmp(argv[i], "--embedding")) embedding = std::atol(next());
    else if (!std::strcmp(argv[i], "--layers")) layers = ParseLayers(next());
    else if (!std::strcmp(argv[i], "--threads")) threads_all = std::atoi(next());
    else if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(next());
    else {
      std::fprintf(stderr,
                   "usage: sgemm_roofline_bench [--batch B] [--fields F] [--embedding K] "
                   "[--layers 400,400,400] [--threads N] [--seconds S]\n");
      return 2;
    }
  }
  if (batch <= 0 || fields <= 0 || embedding <= 0 || threads_all <= 0) {
    std::fprintf(stderr, "sgemm_roofline_bench: sizes and threads must be positive\n");
    return 2;
  }

  // Layer widths: F*K -> layers... -> 1 (the output unit).
  std::vector<int64_t> dims = {fields * embedding};
  dims.insert(dims.end(), layers.begin(), layers.end());
  dims.push_back(1);
  std::vector<Gemm> gemms;
  double macs_per_example = 0;
  for (size_t l = 0; l + 1 < dims.size(); ++l) {
    const int64_t in = dims[l], out = dims[l + 1];
    macs_per_example += static_cast<double>(in) * out;
    gemms.push_back({'N', 'N', batch, out, in, "fwd", static_cast<int>(l)});      // Y = X W
  }
  for (size_t l = dims.size() - 1; l-- > 0;) {
    const int64_t in = dims[l], out = dims[l + 1];
    gemms.push_back({'N', 'T', batch, in, out, "dX", static_cast<int>(l)});       // dX = dY W^T
    gemms.push_back({'T', 'N', in, out, batch, "dW", static_cast<int>(l)});       // dW = X^T dY
  }
  const double flop_per_example = 3.0 * 2.0 * macs_per_example;
  const double flops = flop_per_example * static_cast<double>(batch);

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<Buffers> bufs(gemms.size());
  for (size_t i = 0; i < gemms.size(); ++i) {
    const Gemm& g = gemms[i];
    bufs[i].a.resize(g.m * g.k);
    bufs[i].b.resize(g.k * g.n);
    bufs[i].c.assign(g.m * g.n, 0.f);
    for (auto& x : bufs[i].a) x = u(rng);
    for (auto& x : bufs[i].b) x = u(rng);
  }

  omp_set_num_threads(1);
  const double g1 = Measure(gemms, bufs, flops, seconds);
  omp_set_num_threads(threads_all);
  const double gn = Measure(gemms, bufs, flops, seconds);
  const double mflop = flop_per_example / 1e6;

  std::string shapes;
  for (size_t i = 0; i < gemms.size(); ++i) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s{\"op\":\"%s\",\"layer\":%d,\"m\":%lld,\"n\":%lld,\"k\":%lld}",
                  i ? "," : "", gemms[i].what, gemms[i].layer, static_cast<long long>(gemms[i].m),
                  static_cast<long long>(gemms[i].n), static_cast<long long>(gemms[i].k));
    shapes += buf;
  }
  std::printf(
      "{\"bench\":\"sgemm_roofline\",\"batch\":%lld,\"fields\":%lld,\"embedding\":%lld,"
      "\"mflop_per_example\":%.4f,\"shapes\":[%s],"
      "\"threads_1\":{\"threads\":1,\"gflops\":%.2f,\"roofline_examples_per_sec\":%.0f},"
      "\"threads_all\":{\"threads\":%d,\"gflops\":%.2f,\"roofline_examples_per_sec\":%.0f}}\n",
      static_cast<long long>(batch), static_cast<long long>(fields), static_cast<long long>(embedding), mflop,
      shapes.c_str(), g1, g1 * 1e3 / mflop, threads_all, gn, gn * 1e3 / mflop);
  return 0;
}
