#include "ctrain/io/example_schema.h"

#include <algorithm>
#include <cstdio>

namespace ctrain::io {

Status ExampleSchemaSummary::Add(std::string_view record) {
  CTRAIN_RETURN_IF_ERROR(DecodeExample(record, &view_));
  ++records_;
  duplicate_keys_ += view_.duplicate_keys;
  unknown_fields_ += view_.unknown_fields;
  for (const FeatureEntryView& f : view_.features) {
    auto it = features_.find(f.key);
    if (it == features_.end()) {
      it = features_.emplace(std::string(f.key), FeatureSummary{}).first;
      it->second.key = std::string(f.key);
      it->second.min_count = f.count;
      it->second.max_count = f.count;
    }
    FeatureSummary& s = it->second;
    ++s.present;
    if (f.count == 0) ++s.empty;
    if (!f.kind) {
      ++s.no_kind;
    } else {
      switch (*f.kind) {
        case FeatureKind::kBytes: ++s.bytes_records; break;
        case FeatureKind::kFloat: ++s.float_records; break;
        case FeatureKind::kInt64: ++s.int64_records; break;
      }
    }
    s.min_count = std::min(s.min_count, f.count);
    s.max_count = std::max(s.max_count, f.count);
    s.total_values += f.count;
  }
  return Status::OK();
}

std::vector<FeatureSummary> ExampleSchemaSummary::Features() const {
  std::vector<FeatureSummary> out;
  out.reserve(features_.size());
  for (const auto& [key, s] : features_) out.push_back(s);
  return out;
}

namespace {

std::string KindText(const FeatureSummary& s) {
  std::string k;
  auto add = [&](int64_t n, std::string_view name) {
    if (n == 0) return;
    if (!k.empty()) k += '|';
    k += name;
  };
  add(s.bytes_records, "bytes_list");
  add(s.float_records, "float_list");
  add(s.int64_records, "int64_list");
  if (k.empty()) k = "none";
  return k;
}

// Keys are arbitrary bytes; print non-printable ones (and backslash) as \xNN so a
// line of the table stays one line.
std::string PrintableKey(std::string_view key) {
  std::string k;
  for (unsigned char ch : key) {
    if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
      k += static_cast<char>(ch);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", ch);
      k += buf;
    }
  }
  return k;
}

}  // namespace

std::string ExampleSchemaSummary::ToText() const {
  std::string out = "records: " + std::to_string(records_) + "  duplicate_keys: " +
                    std::to_string(duplicate_keys_) + "  unknown_fields: " + std::to_string(unknown_fields_) +
                    "\n";
  size_t key_width = 7;  // "feature"
  for (const auto& [key, s] : features_) key_width = std::max(key_width, PrintableKey(key).size());
  char line[256];
  std::snprintf(line, sizeof(line), "%-*s  %-10s %8s %8s %8s %8s %6s %6s\n", static_cast<int>(key_width),
                "feature", "kind", "present", "missing", "empty", "no_kind", "min", "max");
  out += line;
  for (const auto& [key, s] : features_) {
    const std::string k = PrintableKey(key);
    out += k;
    out.append(key_width - k.size(), ' ');
    std::snprintf(line, sizeof(line), "  %-10s %8lld %8lld %8lld %8lld %6lld %6lld\n", KindText(s).c_str(),
                  static_cast<long long>(s.present), static_cast<long long>(records_ - s.present),
                  static_cast<long long>(s.empty), static_cast<long long>(s.no_kind),
                  static_cast<long long>(s.min_count), static_cast<long long>(s.max_count));
    out += line;
  }
  return out;
}

}  // namespace ctrain::io
