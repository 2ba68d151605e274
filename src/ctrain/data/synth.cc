#include "ctrain/data/synth.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>

#include "ctrain/io/feature_hash.h"

namespace ctrain::data {
namespace {

using io::Mix64;
using io::UnitDouble;

// Stream ids (each random number of a row is Rand(row, stream)).
constexpr uint64_t kLabelStream = 1;
constexpr uint64_t kNumericStream = 1u << 10;  // + 2 * field (+1)
constexpr uint64_t kZipfStream = 1u << 16;     // + 64 * field + attempt
constexpr int kMaxZipfAttempts = 64;
// Keys of the hidden model (hashed with the seed).
constexpr uint64_t kWeightKey = 0x5745494748540001ULL;
constexpr uint64_t kFactorKey = 0x464143544f520002ULL;
constexpr uint64_t kFieldKey = 0x4649454c44000003ULL;

constexpr double kFirstOrderSd = 0.3;
constexpr double kPairSd = 0.4;
constexpr int kRank = 4;
constexpr int kMaxPairs = 6;
constexpr int kCalibrationRows = 4096;

// Uniform in [-sqrt(3), sqrt(3)): mean 0, variance 1.
inline double UnitUniform(uint64_t h) { return (2.0 * UnitDouble(h) - 1.0) * 1.7320508075688772; }

// Rejection-inversion helpers (Apache Commons RNG's RejectionInversionZipfSampler).
inline double Helper1(double x) {  // log1p(x) / x
  return std::fabs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}
inline double Helper2(double x) {  // expm1(x) / x
  return std::fabs(x) > 1e-8 ? std::expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x));
}
inline double HIntegral(double x, double s) {
  const double lx = std::log(x);
  return Helper2((1.0 - s) * lx) * lx;
}
inline double H(double x, double s) { return std::exp(-s * std::log(x)); }
inline double HIntegralInverse(double x, double s) {
  double t = x * (1.0 - s);
  if (t < -1.0) t = -1.0;
  return std::exp(Helper1(t) * x);
}

}  // namespace

Status ValidateSynthOptions(const SynthOptions& o) {
  auto bad = [](const std::string& what) { return InvalidArgumentError("SynthOptions: " + what); };
  if (o.rows < 0) return bad("rows " + std::to_string(o.rows) + " < 0");
  if (o.field_size < 1) return bad("field_size " + std::to_string(o.field_size) + " < 1");
  if (o.num_numeric < 0 || o.num_numeric > o.field_size) {
    return bad("num_numeric " + std::to_string(o.num_numeric) + " not in [0, field_size " +
               std::to_string(o.field_size) + "]");
  }
  if (o.feature_size < o.field_size) {
    return bad("feature_size " + std::to_string(o.feature_size) + " < field_size " +
               std::to_string(o.field_size));
  }
  if (!(o.zipf_s > 0) || !std::isfinite(o.zipf_s)) return bad("zipf_s must be a finite number > 0");
  if (!(o.target_ctr > 0 && o.target_ctr < 1)) return bad("target_ctr must be in (0, 1)");
  return Status::OK();
}

StatusOr<std::unique_ptr<SynthGenerator>> SynthGenerator::Create(const SynthOptions& options) {
  CTRAIN_RETURN_IF_ERROR(ValidateSynthOptions(options));
  return std::make_unique<SynthGenerator>(options);
}

SynthGenerator::SynthGenerator(SynthOptions options) : options_(options) {
  assert(ValidateSynthOptions(options_).ok());
  const int32_t nn = options_.num_numeric;
  num_cat_ = options_.field_size - nn;
  seed_key_ = Mix64(options_.seed);
  num_pairs_ = std::min(kMaxPairs, num_cat_ / 2);

  lo_.resize(static_cast<size_t>(options_.field_size) + 1);
  for (int32_t f = 0; f <= nn; ++f) lo_[f] = f;
  if (num_cat_ > 0) {
    const int64_t span = options_.feature_size - nn;
    const int64_t base = span / num_cat_, extra = span % num_cat_;
    for (int32_t c = 0; c < num_cat_; ++c) lo_[nn + c + 1] = lo_[nn + c] + base + (c < extra ? 1 : 0);
  }
  const double s = options_.zipf_s;
  for (int32_t c = 0; c < num_cat_; ++c) {
    Zipf z;
    z.n = lo_[nn + c + 1] - lo_[nn + c];
    z.h_x1 = HIntegral(1.5, s) - 1.0;
    z.h_n = HIntegral(static_cast<double>(z.n) + 0.5, s);
    z.s_const = 2.0 - HIntegralInverse(HIntegral(2.5, s) - H(2.0, s), s);
    zipf_.push_back(z);
  }
  for (int32_t f = 0; f < nn; ++f) {
    const uint64_t k = Mix64(seed_key_ ^ kFieldKey ^ static_cast<uint64_t>(f));
    Numeric p;
    p.missing = 0.1 + 0.3 * UnitDouble(Mix64(k + 1));
    p.alpha_inv = 1.0 / (0.7 + 1.3 * UnitDouble(Mix64(k + 2)));      // tail index in [0.7, 2)
    p.scale = std::exp(std::log(100.0) * UnitDouble(Mix64(k + 3)));  // [1, 100)
    p.slope = 0.15 * UnitUniform(Mix64(k + 4));
    numeric_.push_back(p);
  }

  // Calibrate the bias: mean sigmoid(bias + z) over rows 0..N-1 == target_ctr.
  std::vector<double> z(kCalibrationRows);
  std::vector<int64_t> ids(options_.field_size);
  std::vector<float> values(options_.field_size);
  for (int r = 0; r < kCalibrationRows; ++r) z[r] = Features(r, ids.data(), values.data());
  double lo = -40, hi = 40;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    double mean = 0;
    for (double v : z) mean += 1.0 / (1.0 + std::exp(-(mid + v)));
    mean /= kCalibrationRows;
    (mean < options_.target_ctr ? lo : hi) = mid;
  }
  bias_ = 0.5 * (lo + hi);
}

uint64_t SynthGenerator::Rand(uint64_t row_key, uint64_t stream) const {
  return Mix64(row_key ^ (stream * 0xD1B54A32D192ED03ULL));
}

int64_t SynthGenerator::SampleZipf(const Zipf& z, uint64_t row_key, uint64_t stream) const {
  const double s = options_.zipf_s;
  int64_t k = 1;
  for (int attempt = 0; attempt < kMaxZipfAttempts; ++attempt) {
    const double u = z.h_n + UnitDouble(Rand(row_key, stream + attempt)) * (z.h_x1 - z.h_n);
    const double x = HIntegralInverse(u, s);
    k = static_cast<int64_t>(x + 0.5);
    if (k < 1) {
      k = 1;
    } else if (k > z.n) {
      k = z.n;
    }
    if (static_cast<double>(k) - x <= z.s_const || u >= HIntegral(static_cast<double>(k) + 0.5, s) - H(static_cast<double>(k), s)) {
      break;
    }
  }
  return k;
}

double SynthGenerator::Features(int64_t r, int64_t* ids, float* values) const {
  const uint64_t row_key = Mix64(seed_key_ + static_cast<uint64_t>(r));
  const uint64_t wkey = seed_key_ ^ kWeightKey;
  const int32_t nn = options_.num_numeric;
  double logit = 0;
  for (int32_t f = 0; f < nn; ++f) {
    const Numeric& p = numeric_[f];
    double x = 0;
    if (UnitDouble(Rand(row_key, kNumericStream + 2 * f)) >= p.missing) {
      const double u = 1.0 - UnitDouble(Rand(row_key, kNumericStream + 2 * f + 1));  // (0, 1]
      x = std::floor(p.scale * (std::pow(u, -p.alpha_inv) - 1.0));
      if (x > 1e9) x = 1e9;
    }
    ids[f] = f;
    values[f] = static_cast<float>(std::log1p(x));
    logit += p.slope * (values[f] - 2.0);
  }
  for (int32_t c = 0; c < num_cat_; ++c) {
    const int32_t f = nn + c;
    const int64_t k = SampleZipf(zipf_[c], row_key, kZipfStream + 64 * static_cast<uint64_t>(c));
    const int64_t id = lo_[f] + k - 1;
    ids[f] = id;
    values[f] = 1.0f;
    logit += kFirstOrderSd * UnitUniform(Mix64(wkey + static_cast<uint64_t>(id)));
  }
  // Low-rank interactions between categorical fields (2p, 2p+1).
  const uint64_t fkey = seed_key_ ^ kFactorKey;
  for (int32_t p = 0; p < num_pairs_; ++p) {
    const int64_t a = ids[nn + 2 * p], b = ids[nn + 2 * p + 1];
    double dot = 0;
    for (int d = 0; d < kRank; ++d) {
      dot += UnitUniform(Mix64(fkey + static_cast<uint64_t>(a) * kRank + d)) *
             UnitUniform(Mix64(~fkey + static_cast<uint64_t>(b) * kRank + d));
    }
    logit += kPairSd * dot / 2.0;  // sd of a sum of 4 unit products is 2
  }
  return logit;
}

void SynthGenerator::Row(int64_t r, float* label, int64_t* ids, float* values, double* logit) const {
  const double z = bias_ + Features(r, ids, values);
  const double p = 1.0 / (1.0 + std::exp(-z));
  const uint64_t row_key = Mix64(seed_key_ + static_cast<uint64_t>(r));
  *label = UnitDouble(Rand(row_key, kLabelStream)) < p ? 1.0f : 0.0f;
  if (logit != nullptr) *logit = z;
}

void SynthGenerator::AppendRows(int64_t first, int64_t count, Batch* batch) const {
  const int32_t f = options_.field_size;
  if (batch->field_size == 0 && batch->empty()) batch->field_size = f;
  assert(batch->field_size == f);
  const size_t n0 = batch->labels.size();
  batch->labels.resize(n0 + static_cast<size_t>(count));
  batch->ids.resize((n0 + static_cast<size_t>(count)) * f);
  batch->values.resize((n0 + static_cast<size_t>(count)) * f);
  for (int64_t i = 0; i < count; ++i) {
    const size_t b = n0 + static_cast<size_t>(i);
    Row(first + i, &batch->labels[b], &batch->ids[b * f], &batch->values[b * f]);
  }
}

std::pair<int64_t, int64_t> SynthGenerator::field_range(int32_t f) const { return {lo_[f], lo_[f + 1]}; }

}  // namespace ctrain::data
