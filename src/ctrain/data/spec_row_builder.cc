#include "ctrain/data/spec_row_builder.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "ctrain/io/feature_hash.h"

namespace ctrain::data {

StatusOr<SpecRowBuilder> SpecRowBuilder::Create(const FeatureSpec& spec) {
  SpecRowBuilder b;
  b.spec_ = spec;
  b.scratch_.resize(spec.field_size);
  b.vocab_.resize(spec.fields.size());
  for (size_t i = 0; i < spec.fields.size(); ++i) {
    const SpecField& f = spec.fields[i];
    if (f.mapping == IdMapping::kVocabulary)
      for (size_t v = 0; v < f.vocabulary.size(); ++v) b.vocab_[i][f.vocabulary[v]] = static_cast<int64_t>(v) + 1;
  }
  if (spec.input == SpecInput::kExample) {
    std::vector<io::FeatureSpec> ps;
    io::FeatureSpec label;
    label.key = spec.label_key;
    label.kind = spec.label_dtype;
    ps.push_back(label);
    for (const SpecField& f : spec.fields) {
      io::FeatureSpec p;
      p.key = f.key;
      p.kind = f.dtype;
      p.var_len = f.var_len;
      p.length = f.var_len ? 1 : f.length;
      if (!f.var_len && f.default_value) {
        if (f.dtype == io::FeatureKind::kFloat) p.default_value = io::ParsedFeature::Floats({*f.default_value});
        else p.default_value = io::ParsedFeature::Int64s({static_cast<int64_t>(*f.default_value)});
      }
      ps.push_back(std::move(p));
    }
    StatusOr<io::ExampleParser> parser = io::ExampleParser::Create(std::move(ps));
    if (!parser.ok()) return parser.status().WithContext(spec.source);
    b.parser_.emplace(std::move(*parser));
  } else if (spec.input == SpecInput::kLibSvm) {
    for (size_t i = 0; i < spec.fields.size(); ++i)
      b.libsvm_ranges_.push_back({spec.fields[i].ids_lo - spec.id_base, static_cast<int32_t>(i)});
    std::sort(b.libsvm_ranges_.begin(), b.libsvm_ranges_.end());
  } else {
    int64_t mx = 0;
    for (const SpecField& f : spec.fields) mx = std::max(mx, f.ffm_field);
    b.ffm_entry_.assign(mx + 1, -1);
    for (size_t i = 0; i < spec.fields.size(); ++i) b.ffm_entry_[spec.fields[i].ffm_field] = static_cast<int32_t>(i);
  }
  return b;
}

namespace {
float SignedLog1p(float x) { return x >= 0 ? std::log1p(x) : -std::log1p(-x); }
}  // namespace

Status SpecRowBuilder::FromExample(std::string_view record, SpecRow* row) {
  row->Clear();
  CTRAIN_RETURN_IF_ERROR(parser_->Parse(record, &parsed_));
  const io::ParsedFeature& lab = parsed_[0];
  const double value = lab.kind == io::FeatureKind::kFloat ? lab.floats[0] : static_cast<double>(lab.int64s[0]);
  const LabelRule& rule = spec_.label_rule;
  if (rule.kind != LabelRule::Kind::kNone && !std::isfinite(value))
    return InvalidArgumentError("feature '" + spec_.label_key + "': label value " + std::to_string(value) +
                                " is not finite");
  const double label =
      rule.kind == LabelRule::Kind::kThreshold ? (value > rule.threshold ? 1.0 : 0.0)
      : rule.kind == LabelRule::Kind::kPositiveValues
          ? (std::any_of(rule.positive_values.begin(), rule.positive_values.end(),
                         [&](double v) {  // a float_list value is a float: compare as floats (0.1 == 0.1f)
                           return lab.kind == io::FeatureKind::kFloat ? static_cast<float>(v) == lab.floats[0]
                                                                      : v == value;
                         })
                 ? 1.0
                 : 0.0)
          : value;
  if (label != 0 && label != 1)
    return InvalidArgumentError("feature '" + spec_.label_key + "': label " + std::to_string(label) +
                                " is not 0 or 1");
  row->label = static_cast<float>(label);
  for (size_t i = 0; i < spec_.fields.size(); ++i) {
    const SpecField& f = spec_.fields[i];
    const io::ParsedFeature& p = parsed_[i + 1];
    if (f.kind == SpecFieldKind::kNumeric) {
      for (int32_t k = 0; k < f.length; ++k) {
        float x = f.dtype == io::FeatureKind::kFloat ? p.floats[k] : static_cast<float>(p.int64s[k]);
        if (f.log1p) x = SignedLog1p(x);
        if (!std::isfinite(x))
          return InvalidArgumentError("feature '" + f.key + "' value " + std::to_string(k) + ": " +
                                      std::to_string(x) + " is not finite");
        row->ids.push_back(f.offsets[k]);
        row->values.push_back(x);
        row->lengths.push_back(1);
      }
      continue;
    }
    const int64_t n = p.size();
    auto map = [&](int64_t k, int64_t* id) -> Status {
      int64_t local = 0;
      if (f.mapping == IdMapping::kVocabulary) {
        std::string_view key;
        if (f.dtype == io::FeatureKind::kBytes) {
          key = p.bytes[k];
        } else {
          int_text_ = std::to_string(p.int64s[k]);
          key = int_text_;
        }
        auto it = vocab_[i].find(std::string(key));
        local = it == vocab_[i].end() ? 0 : it->second;
      } else if (f.mapping == IdMapping::kIdentity) {
        local = p.int64s[k];
        if (local < 0 || local >= f.buckets)
          return InvalidArgumentError("feature '" + f.key + "' value " + std::to_string(k) + ": id " +
                                      std::to_string(local) + " is outside [0, " + std::to_string(f.buckets) +
                                      ") (map identity: raise buckets, or use map hash)");
      } else if (f.dtype == io::FeatureKind::kBytes) {
        local = static_cast<int64_t>(io::Hash64(p.bytes[k], spec_.hash_seed) % static_cast<uint64_t>(f.buckets));
      } else {
        char le[8];
        const uint64_t v = static_cast<uint64_t>(p.int64s[k]);
        for (int b = 0; b < 8; ++b) le[b] = static_cast<char>((v >> (8 * b)) & 0xff);
        local = static_cast<int64_t>(io::Hash64(std::string_view(le, 8), spec_.hash_seed) %
                                     static_cast<uint64_t>(f.buckets));
      }
      *id = local;
      return Status::OK();
    };
    if (f.var_len) {
      const float w = f.pooling == Pooling::kMean && n > 0 ? 1.0f / static_cast<float>(n) : 1.0f;
      for (int64_t k = 0; k < n; ++k) {
        int64_t local = 0;
        CTRAIN_RETURN_IF_ERROR(map(k, &local));
        row->ids.push_back(f.offsets[0] + local);
        row->values.push_back(w);
      }
      row->lengths.push_back(static_cast<int32_t>(n));
    } else {
      for (int32_t k = 0; k < f.length; ++k) {
        int64_t local = 0;
        CTRAIN_RETURN_IF_ERROR(map(k, &local));
        row->ids.push_back(f.offsets[k] + local);
        row->values.push_back(1.0f);
        row->lengths.push_back(1);
      }
    }
  }
  return Status::OK();
}

Status SpecRowBuilder::Finish(SpecRow* row) {
  for (size_t i = 0; i < spec_.fields.size(); ++i) {
    auto& bucket = scratch_[i];
    const float w = spec_.fields[i].pooling == Pooling::kMean && !bucket.empty()
                        ? 1.0f / static_cast<float>(bucket.size())
                        : 1.0f;
    for (const auto& [id, v] : bucket) {
      row->ids.push_back(id);
      row->values.push_back(v * w);
    }
    row->lengths.push_back(static_cast<int32_t>(bucket.size()));
    bucket.clear();
  }
  return Status::OK();
}

Status SpecRowBuilder::FromLibSvm(float label, const int64_t* ids, const float* values, int32_t n, SpecRow* row) {
  row->Clear();
  row->label = label;
  for (auto& b : scratch_) b.clear();
  for (int32_t k = 0; k < n; ++k) {
    const int64_t id = ids[k];
    auto it = std::upper_bound(libsvm_ranges_.begin(), libsvm_ranges_.end(), std::make_pair(id, INT32_MAX));
    const SpecField* f = it == libsvm_ranges_.begin() ? nullptr : &spec_.fields[std::prev(it)->second];
    if (f == nullptr || id > f->ids_hi - spec_.id_base)
      return InvalidArgumentError("pair " + std::to_string(k + 1) + ": id " + std::to_string(id + spec_.id_base) +
                                  " (as written) is in no field of the feature spec's field map");
    scratch_[std::prev(it)->second].push_back({id, values[k]});
  }
  return Finish(row);
}

Status SpecRowBuilder::FromLibFfm(float label, const std::vector<io::FfmTriple>& triples, SpecRow* row) {
  row->Clear();
  row->label = label;
  for (auto& b : scratch_) b.clear();
  for (size_t k = 0; k < triples.size(); ++k) {
    const io::FfmTriple& t = triples[k];
    const int32_t e = t.field < static_cast<int64_t>(ffm_entry_.size()) ? ffm_entry_[t.field] : -1;
    if (e < 0)
      return InvalidArgumentError("triple " + std::to_string(k + 1) + ": field " + std::to_string(t.field) +
                                  " is in no field of the feature spec");
    if (t.feature >= spec_.feature_size)
      return InvalidArgumentError("triple " + std::to_string(k + 1) + ": feature " + std::to_string(t.feature) +
                                  " is outside the spec's feature_size " + std::to_string(spec_.feature_size));
    scratch_[e].push_back({t.feature, t.value});
  }
  return Finish(row);
}

}  // namespace ctrain::data
