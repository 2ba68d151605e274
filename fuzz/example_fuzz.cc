// libFuzzer target for the tf.train.Example codec (src/ctrain/io/example.h) and
// the schema summary. Besides "never crash" (ASan/UBSan), it checks that the
// decoders agree with each other and that re-encoding round-trips:
//   * DecodeExample OK  => ExampleParser with a VarLen spec per key succeeds and
//     returns exactly the counted values; EncodeExample of those values decodes to
//     the same (key, kind, count) list (keys with Feature {} excluded);
//   * ParseSeedExample OK and DecodeExample OK => the view agrees on the seed keys.
// Build: CC=clang CXX=clang++ cmake -DCTRAIN_FUZZ=ON ...; run build/fuzz/example_fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/io/example.h"
#include "ctrain/io/example_schema.h"

namespace {

using ctrain::io::ExampleParser;
using ctrain::io::ExampleView;
using ctrain::io::FeatureKind;
using ctrain::io::FeatureSpec;
using ctrain::io::ParsedFeature;

#define FUZZ_CHECK(cond) \
  do {                   \
    if (!(cond)) abort(); \
  } while (0)

ExampleParser& SmallParser() {
  static ExampleParser* parser = [] {
    std::vector<FeatureSpec> specs(4);
    specs[0].key = "label";
    specs[0].kind = FeatureKind::kFloat;
    specs[0].default_value = ParsedFeature::Floats({0});
    specs[1].key = "ids";
    specs[1].kind = FeatureKind::kInt64;
    specs[1].var_len = true;
    specs[2].key = "values";
    specs[2].kind = FeatureKind::kFloat;
    specs[2].length = 3;
    specs[3].key = "b";
    specs[3].kind = FeatureKind::kBytes;
    specs[3].var_len = true;
    auto p = ExampleParser::Create(specs);
    if (!p.ok()) abort();
    return new ExampleParser(std::move(*p));
  }();
  return *parser;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view rec(reinterpret_cast<const char*>(data), size);

  // Seed fast path, two field sizes.
  ctrain::io::SeedSchema seed;
  seed.field_size = 3;
  float label;
  int64_t ids[3];
  float values[3];
  const bool seed_ok = ctrain::io::ParseSeedExample(rec, seed, &label, ids, values).ok();
  if (seed_ok) FUZZ_CHECK(label == 0.0f || label == 1.0f);
  seed.field_size = 0;
  ctrain::io::ParseSeedExample(rec, seed, &label, nullptr, nullptr).IgnoreError();

  // General path with a small fixed spec.
  std::vector<ParsedFeature> out;
  if (SmallParser().Parse(rec, &out).ok()) {
    FUZZ_CHECK(out.size() == 4);
    FUZZ_CHECK(out[0].floats.size() == 1);
    FUZZ_CHECK(out[2].floats.size() == 3);
  }

  // Schema summary.
  ctrain::io::ExampleSchemaSummary summary;
  if (summary.Add(rec).ok()) {
    FUZZ_CHECK(summary.records() == 1);
    summary.ToText();
  }

  // Cross-checks.
  ExampleView view;
  if (!ctrain::io::DecodeExample(rec, &view).ok()) return 0;
  std::vector<FeatureSpec> specs;
  std::vector<std::pair<std::string, ParsedFeature>> features;
  for (const auto& f : view.features) {
    FeatureSpec s;
    s.key = std::string(f.key);
    s.kind = f.kind.value_or(FeatureKind::kBytes);
    s.var_len = true;
    specs.push_back(std::move(s));
  }
  // An empty key cannot be a spec; drop it from the cross-check.
  std::erase_if(specs, [](const FeatureSpec& s) { return s.key.empty(); });
  auto parsed = ctrain::io::ParseExample(rec, specs);
  FUZZ_CHECK(parsed.ok());
  size_t j = 0;
  for (const auto& f : view.features) {
    if (f.key.empty()) continue;
    const ParsedFeature& pf = (*parsed)[j++];
    FUZZ_CHECK(pf.size() == (f.kind ? f.count : 0));
    if (f.kind) features.push_back({std::string(f.key), pf});
  }
  std::string again;
  ctrain::io::EncodeExample(features, &again);
  ExampleView view2;
  FUZZ_CHECK(ctrain::io::DecodeExample(again, &view2).ok());
  FUZZ_CHECK(view2.features.size() == features.size());
  FUZZ_CHECK(view2.unknown_fields == 0 && view2.duplicate_keys == 0);
  for (size_t i = 0; i < features.size(); ++i) {
    FUZZ_CHECK(view2.features[i].key == features[i].first);
    FUZZ_CHECK(view2.features[i].kind == features[i].second.kind);
    FUZZ_CHECK(view2.features[i].count == features[i].second.size());
  }
  if (seed_ok) {
    for (const auto& f : view.features) {
      if (f.key == "ids") FUZZ_CHECK(f.kind == FeatureKind::kInt64 && f.count == 3);
      if (f.key == "values") FUZZ_CHECK(f.kind == FeatureKind::kFloat && f.count == 3);
    }
  }
  return 0;
}
