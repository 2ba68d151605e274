// tf.train.Example decoding. See example.h and docs/formats/example.md.
//
// Structure: the wire primitives (varint, length, skip) and the walkers for
// each message level (example_wire.h) call a "sink" for the values of one
// Feature. Sinks decide what to keep: a fixed caller buffer (seed fast path),
// vectors (general path) or only counts (inspection). Errors on the hot path are
// recorded in a small Ctx (kind + position) and turned into a Status once.
#include "ctrain/io/example.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>

#include "ctrain/io/example_wire.h"

namespace ctrain::io {

static_assert(std::endian::native == std::endian::little,
              "FloatList values are little-endian fixed32; add byte swapping for big-endian hosts");

namespace {

using namespace example_wire;

constexpr int kNoKind = -1;

// Counts the values of the final kind only.
struct CountSink {
  int kind = kNoKind;
  int64_t count = 0;
  void Begin(FeatureKind k) {
    if (kind != static_cast<int>(k)) {
      kind = static_cast<int>(k);
      count = 0;
    }
  }
  void Bytes(const uint8_t*, size_t) { ++count; }
  void Floats(const uint8_t*, size_t n) { count += static_cast<int64_t>(n); }
  void Int64(int64_t) { ++count; }
};

// Writes up to `cap` int64 values into out; counts everything.
struct Int64OutSink : CountSink {
  int64_t* out;
  int64_t cap;
  Int64OutSink(int64_t* o, int64_t c) : out(o), cap(c) {}
  void Int64(int64_t v) {
    if (count < cap) out[count] = v;
    ++count;
  }
};

// Writes up to `cap` floats into out; counts everything.
struct FloatOutSink : CountSink {
  float* out;
  int64_t cap;
  FloatOutSink(float* o, int64_t c) : out(o), cap(c) {}
  void Floats(const uint8_t* p, size_t n) {
    const int64_t room = cap - count;
    if (room > 0) {
      const size_t k = std::min<size_t>(n, static_cast<size_t>(room));
      std::memcpy(out + count, p, k * sizeof(float));
    }
    count += static_cast<int64_t>(n);
  }
};

// Keeps the first float / int64 value (a label).
struct LabelSink : CountSink {
  float f = 0;
  int64_t i = 0;
  void Floats(const uint8_t* p, size_t n) {
    if (count == 0 && n > 0) std::memcpy(&f, p, sizeof(float));
    count += static_cast<int64_t>(n);
  }
  void Int64(int64_t v) {
    if (count == 0) i = v;
    ++count;
  }
};

// Appends the values of kind `want` to a ParsedFeature, counts the others.
struct VectorSink : CountSink {
  FeatureKind want;
  ParsedFeature* pf;
  size_t bytes_used = 0;  // reuses the std::string objects already in pf->bytes
  VectorSink(FeatureKind w, ParsedFeature* p) : want(w), pf(p) {}
  void Begin(FeatureKind k) {
    if (kind != static_cast<int>(k)) {
      kind = static_cast<int>(k);
      count = 0;
      if (k == want) {
        bytes_used = 0;
        pf->floats.clear();
        pf->int64s.clear();
      }
    }
  }
  void Bytes(const uint8_t* p, size_t n) {
    ++count;
    if (want != FeatureKind::kBytes) return;
    const char* s = reinterpret_cast<const char*>(p);
    if (bytes_used < pf->bytes.size()) {
      pf->bytes[bytes_used].assign(s, n);
    } else {
      pf->bytes.emplace_back(s, n);
    }
    ++bytes_used;
  }
  void Floats(const uint8_t* p, size_t n) {
    count += static_cast<int64_t>(n);
    if (want != FeatureKind::kFloat) return;
    const size_t old = pf->floats.size();
    pf->floats.resize(old + n);
    std::memcpy(pf->floats.data() + old, p, n * sizeof(float));
  }
  void Int64(int64_t v) {
    ++count;
    if (want == FeatureKind::kInt64) pf->int64s.push_back(v);
  }
};

std::string Quoted(std::string_view key) {
  std::string s = "'";
  s += key;
  s += "'";
  return s;
}

std::string Found(int kind, int64_t count) {
  if (kind == kNoKind) return "found Feature with no kind";
  std::string s = "found ";
  s += FeatureKindName(static_cast<FeatureKind>(kind));
  s += " of length " + std::to_string(count);
  return s;
}

Status Mismatch(std::string_view key, std::string_view expected, int kind, int64_t count) {
  std::string m = "feature " + Quoted(key) + ": expected ";
  m += expected;
  m += ", ";
  m += Found(kind, count);
  return InvalidArgumentError(m);
}

Status Missing(std::string_view key) { return InvalidArgumentError("missing feature " + Quoted(key)); }

std::string FloatText(float f) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), f);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string_view FeatureKindName(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kBytes: return "bytes_list";
    case FeatureKind::kFloat: return "float_list";
    case FeatureKind::kInt64: return "int64_list";
  }
  return "unknown_list";
}

// ---------------------------------------------------------------------------
// Seed fast path
// ---------------------------------------------------------------------------

Status ParseSeedExample(std::string_view record, const SeedSchema& schema, float* label, int64_t* ids,
                        float* values) {
  if (schema.field_size < 0 || schema.label_key == schema.ids_key ||
      schema.label_key == schema.values_key || schema.ids_key == schema.values_key) [[unlikely]] {
    return InvalidArgumentError("invalid seed schema: field_size " + std::to_string(schema.field_size) +
                                " must be >= 0 and keys " + Quoted(schema.label_key) + ", " +
                                Quoted(schema.ids_key) + ", " + Quoted(schema.values_key) +
                                " must differ");
  }
  const auto* base = reinterpret_cast<const uint8_t*>(record.data());
  Ctx c(base);
  Entry lab, idn, val;  // last entry of each key (protobuf map: last wins)
  const std::string_view lk = schema.label_key, ik = schema.ids_key, vk = schema.values_key;
  auto on_entry = [&](const Entry& en) {
    const size_t n = en.key.size();
    if (n == ik.size() && std::memcmp(en.key.data(), ik.data(), n) == 0) {
      idn = en;
    } else if (n == vk.size() && std::memcmp(en.key.data(), vk.data(), n) == 0) {
      val = en;
    } else if (n == lk.size() && std::memcmp(en.key.data(), lk.data(), n) == 0) {
      lab = en;
    }
    return true;
  };
  if (!WalkExample(base, base + record.size(), on_entry, c)) return c.ToStatus();
  if (lab.begin == nullptr || idn.begin == nullptr || val.begin == nullptr) [[unlikely]] {
    // Not the seed layout: name the record's keys and the way to read it.
    std::vector<std::string> keys;
    Ctx k(base);
    WalkExample(base, base + record.size(), [&](const Entry& en) {
      keys.emplace_back(en.key);
      return true;
    }, k);
    std::string m = "missing feature " + Quoted(lab.begin == nullptr ? lk : idn.begin == nullptr ? ik : vk) +
                    ": the example's keys are ";
    for (size_t i = 0; i < keys.size() && i < 16; ++i) m += (i ? ", " : "") + Quoted(keys[i]);
    if (keys.size() > 16) m += ", ... (" + std::to_string(keys.size()) + " keys)";
    if (keys.empty()) m += "none";
    m += "; the seed layout is " + Quoted(lk) + ", " + Quoted(ik) + " (int64_list[F]), " + Quoted(vk) +
         " (float_list[F]): read other keys through a feature spec (`ctrain inspect FILE --suggest-spec spec.json`, "
         "then --feature-spec spec.json; Python: feature_spec=\"spec.json\")";
    return InvalidArgumentError(m);
  }

  const int64_t f = schema.field_size;
  LabelSink ls;
  if (!WalkEntryValues(lab, ls, c)) return c.ToStatus();
  if ((ls.kind != static_cast<int>(FeatureKind::kFloat) &&
       ls.kind != static_cast<int>(FeatureKind::kInt64)) ||
      ls.count != 1) {
    return Mismatch(lk, "float_list or int64_list of length 1", ls.kind, ls.count);
  }
  if (ls.kind == static_cast<int>(FeatureKind::kFloat)) {
    if (ls.f != 0.0f && ls.f != 1.0f) {
      return InvalidArgumentError("feature " + Quoted(lk) + ": expected 0 or 1, found " + FloatText(ls.f));
    }
    *label = ls.f;
  } else {
    if (ls.i != 0 && ls.i != 1) {
      return InvalidArgumentError("feature " + Quoted(lk) + ": expected 0 or 1, found " + std::to_string(ls.i));
    }
    *label = static_cast<float>(ls.i);
  }

  Int64OutSink is(ids, f);
  if (!WalkEntryValues(idn, is, c)) return c.ToStatus();
  if (is.kind != static_cast<int>(FeatureKind::kInt64) || is.count != f) {
    return Mismatch(ik, "int64_list of length " + std::to_string(f), is.kind, is.count);
  }
  FloatOutSink fs(values, f);
  if (!WalkEntryValues(val, fs, c)) return c.ToStatus();
  if (fs.kind != static_cast<int>(FeatureKind::kFloat) || fs.count != f) {
    return Mismatch(vk, "float_list of length " + std::to_string(f), fs.kind, fs.count);
  }
  // Same rule as the text formats: a NaN/Inf feature value is bad input, not a
  // number to train on (it would surface much later as a NaN loss).
  for (int32_t i = 0; i < f; ++i) {
    if (!std::isfinite(values[i])) [[unlikely]] {
      return InvalidArgumentError("feature " + Quoted(vk) + ": value " + std::to_string(i) + " of " +
                                  std::to_string(f) + " is " + FloatText(values[i]) + ", expected a finite number");
    }
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// General path
// ---------------------------------------------------------------------------

int64_t ParsedFeature::size() const {
  switch (kind) {
    case FeatureKind::kBytes: return static_cast<int64_t>(bytes.size());
    case FeatureKind::kFloat: return static_cast<int64_t>(floats.size());
    case FeatureKind::kInt64: return static_cast<int64_t>(int64s.size());
  }
  return 0;
}

void ParsedFeature::Clear() {
  bytes.clear();
  floats.clear();
  int64s.clear();
}

ParsedFeature ParsedFeature::Bytes(std::vector<std::string> v) {
  ParsedFeature f;
  f.kind = FeatureKind::kBytes;
  f.bytes = std::move(v);
  return f;
}
ParsedFeature ParsedFeature::Floats(std::vector<float> v) {
  ParsedFeature f;
  f.kind = FeatureKind::kFloat;
  f.floats = std::move(v);
  return f;
}
ParsedFeature ParsedFeature::Int64s(std::vector<int64_t> v) {
  ParsedFeature f;
  f.kind = FeatureKind::kInt64;
  f.int64s = std::move(v);
  return f;
}

StatusOr<ExampleParser> ExampleParser::Create(std::vector<FeatureSpec> specs) {
  for (size_t i = 0; i < specs.size(); ++i) {
    const FeatureSpec& s = specs[i];
    const std::string where = "feature spec " + std::to_string(i) + " (" + Quoted(s.key) + ")";
    if (s.key.empty()) return InvalidArgumentError(where + ": empty key");
    for (size_t j = 0; j < i; ++j) {
      if (specs[j].key == s.key) {
        return InvalidArgumentError(where + ": key repeats feature spec " + std::to_string(j));
      }
    }
    if (!s.var_len && s.length < 0) {
      return InvalidArgumentError(where + ": length " + std::to_string(s.length) + " must be >= 0");
    }
    if (s.default_value) {
      if (s.var_len) return InvalidArgumentError(where + ": a VarLen feature takes no default value");
      if (s.default_value->kind != s.kind) {
        return InvalidArgumentError(where + ": default value is " +
                                    std::string(FeatureKindName(s.default_value->kind)) + ", expected " +
                                    std::string(FeatureKindName(s.kind)));
      }
      const int64_t n = s.default_value->size();
      if (n != s.length && n != 1) {
        return InvalidArgumentError(where + ": default value has " + std::to_string(n) +
                                    " values, expected " + std::to_string(s.length) + " or 1");
      }
    }
  }
  ExampleParser p;
  p.specs_ = std::move(specs);
  size_t cap = 8;
  while (cap < 2 * p.specs_.size()) cap *= 2;
  p.slots_.assign(cap, -1);
  for (size_t i = 0; i < p.specs_.size(); ++i) {
    size_t h = std::hash<std::string_view>()(p.specs_[i].key) & (cap - 1);
    while (p.slots_[h] >= 0) h = (h + 1) & (cap - 1);
    p.slots_[h] = static_cast<int32_t>(i);
  }
  p.matches_.resize(p.specs_.size());
  return p;
}

int32_t ExampleParser::Find(std::string_view key) const {
  const size_t mask = slots_.size() - 1;
  size_t h = std::hash<std::string_view>()(key) & mask;
  while (true) {
    const int32_t i = slots_[h];
    if (i < 0) return -1;
    if (specs_[i].key == key) return i;
    h = (h + 1) & mask;
  }
}

Status ExampleParser::Parse(std::string_view record, std::vector<ParsedFeature>* out) {
  out->resize(specs_.size());
  for (Match& m : matches_) m.begin = nullptr;
  const auto* base = reinterpret_cast<const uint8_t*>(record.data());
  Ctx c(base);
  auto on_entry = [&](const Entry& en) {
    const int32_t i = Find(en.key);
    if (i >= 0) matches_[i] = Match{en.begin, en.end, en.value_begin, en.value_end, en.value_fields};
    return true;
  };
  if (!WalkExample(base, base + record.size(), on_entry, c)) return c.ToStatus();

  for (size_t i = 0; i < specs_.size(); ++i) {
    const FeatureSpec& spec = specs_[i];
    ParsedFeature& pf = (*out)[i];
    pf.kind = spec.kind;
    pf.floats.clear();
    pf.int64s.clear();
    int kind = kNoKind;
    int64_t count = 0;
    const Match& m = matches_[i];
    if (m.begin != nullptr) {
      VectorSink s(spec.kind, &pf);
      if (!WalkEntryValues(m.begin, m.end, m.value_begin, m.value_end, m.value_fields, s, c)) {
        return c.ToStatus();
      }
      pf.bytes.resize(spec.kind == FeatureKind::kBytes && s.kind == static_cast<int>(FeatureKind::kBytes)
                          ? s.bytes_used
                          : 0);
      kind = s.kind;
      count = s.count;
    } else {
      pf.bytes.clear();
    }
    if (kind == kNoKind) {  // missing key or Feature {} (TensorFlow treats both as missing)
      if (spec.var_len) continue;
      if (!spec.default_value) return Missing(spec.key);
      const ParsedFeature& d = *spec.default_value;
      const int64_t reps = d.size() == spec.length ? 1 : spec.length;  // Create() checked: size is length or 1
      for (int64_t r = 0; r < reps; ++r) {
        pf.bytes.insert(pf.bytes.end(), d.bytes.begin(), d.bytes.end());
        pf.floats.insert(pf.floats.end(), d.floats.begin(), d.floats.end());
        pf.int64s.insert(pf.int64s.end(), d.int64s.begin(), d.int64s.end());
      }
      continue;
    }
    if (kind != static_cast<int>(spec.kind) || (!spec.var_len && count != spec.length)) {
      std::string expected(FeatureKindName(spec.kind));
      if (!spec.var_len) expected += " of length " + std::to_string(spec.length);
      return Mismatch(spec.key, expected, kind, count);
    }
  }
  return Status::OK();
}

StatusOr<std::vector<ParsedFeature>> ParseExample(std::string_view record, std::span<const FeatureSpec> specs) {
  CTRAIN_ASSIGN_OR_RETURN(ExampleParser parser,
                          ExampleParser::Create(std::vector<FeatureSpec>(specs.begin(), specs.end())));
  std::vector<ParsedFeature> out;
  CTRAIN_RETURN_IF_ERROR(parser.Parse(record, &out));
  return out;
}

Status DecodeExample(std::string_view record, ExampleView* view) {
  view->features.clear();
  view->duplicate_keys = 0;
  view->unknown_fields = 0;
  const auto* base = reinterpret_cast<const uint8_t*>(record.data());
  Ctx c(base);
  auto on_entry = [&](const Entry& en) {
    CountSink s;
    if (!WalkEntryValues(en, s, c)) return false;
    FeatureEntryView f;
    f.key = en.key;
    if (s.kind != kNoKind) f.kind = static_cast<FeatureKind>(s.kind);
    f.count = s.count;
    view->features.push_back(f);
    return true;
  };
  if (!WalkExample(base, base + record.size(), on_entry, c)) return c.ToStatus();
  view->unknown_fields = c.unknown;
  auto& fs = view->features;
  std::stable_sort(fs.begin(), fs.end(),
                   [](const FeatureEntryView& a, const FeatureEntryView& b) { return a.key < b.key; });
  // Keep the last entry of each run of equal keys (the latest on the wire).
  size_t w = 0;
  for (size_t r = 0; r < fs.size(); ++r) {
    if (r + 1 < fs.size() && fs[r + 1].key == fs[r].key) {
      ++view->duplicate_keys;
      continue;
    }
    fs[w++] = fs[r];
  }
  fs.resize(w);
  return Status::OK();
}

}  // namespace ctrain::io
