#include "ctrain/data/feature_spec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "ctrain/io/file.h"

namespace ctrain::data {

namespace {

using nlohmann::json;

// Largest id space a spec may declare (the tables are dense arrays).
constexpr int64_t kMaxFeatureSize = int64_t{1} << 40;

json TomlToJson(const toml::node& n) {
  if (const auto* t = n.as_table()) {
    json j = json::object();
    for (const auto& [k, v] : *t) j[std::string(k.str())] = TomlToJson(v);
    return j;
  }
  if (const auto* a = n.as_array()) {
    json j = json::array();
    for (const auto& v : *a) j.push_back(TomlToJson(v));
    return j;
  }
  if (const auto* v = n.as_string()) return v->get();
  if (const auto* v = n.as_integer()) return v->get();
  if (const auto* v = n.as_floating_point()) return v->get();
  if (const auto* v = n.as_boolean()) return v->get();
  return json();  // dates and times: refused by the schema below (wrong type)
}

class SpecParser {
 public:
  explicit SpecParser(std::string name, std::string base_dir) : name_(std::move(name)), base_(std::move(base_dir)) {}

  Status Bad(const std::string& where, const std::string& what) const {
    return InvalidArgumentError(name_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }

  StatusOr<FeatureSpec> Parse(const json& root) {
    if (!root.is_object()) return Bad("", "the spec must be an object with \"label\" and \"fields\"");
    static const std::set<std::string> kTop = {"input", "label", "label_dtype", "label_rule", "id_base",
                                               "hash_seed", "feature_size", "fields", "version"};
    for (const auto& [k, v] : root.items())
      if (!kTop.count(k)) return Bad("", "unknown key \"" + k + "\" (known: input, label, label_dtype, label_rule, "
                                          "id_base, hash_seed, feature_size, fields, version)");
    if (root.contains("version") && root["version"] != 1)
      return Bad("version", "this ctrain reads feature spec version 1, found " + root["version"].dump());
    FeatureSpec spec;
    spec.source = name_;
    std::string input = "example";
    CTRAIN_RETURN_IF_ERROR(Str(root, "input", "", &input));
    if (input == "example" || input == "tfrecord") spec.input = SpecInput::kExample;
    else if (input == "libsvm") spec.input = SpecInput::kLibSvm;
    else if (input == "libffm") spec.input = SpecInput::kLibFfm;
    else return Bad("input", "expected example|libsvm|libffm, found \"" + input + "\"");
    CTRAIN_RETURN_IF_ERROR(Str(root, "label", "", &spec.label_key));
    std::string ld = "float";
    CTRAIN_RETURN_IF_ERROR(Str(root, "label_dtype", "", &ld));
    if (ld == "float") spec.label_dtype = io::FeatureKind::kFloat;
    else if (ld == "int64") spec.label_dtype = io::FeatureKind::kInt64;
    else return Bad("label_dtype", "expected float|int64, found \"" + ld + "\"");
    if (root.contains("label_rule")) {
      if (spec.input != SpecInput::kExample)
        return Bad("label_rule", "applies to input \"example\" only (LibSVM and libFFM labels are read as 0/1)");
      CTRAIN_RETURN_IF_ERROR(ParseLabelRule(root["label_rule"], &spec.label_rule));
    }
    int64_t id_base = 0, seed = 0, feature_size = 0;
    CTRAIN_RETURN_IF_ERROR(Int(root, "id_base", "", &id_base));
    CTRAIN_RETURN_IF_ERROR(Int(root, "hash_seed", "", &seed));
    CTRAIN_RETURN_IF_ERROR(Int(root, "feature_size", "", &feature_size));
    if (id_base < 0 || id_base > (1 << 30)) return Bad("id_base", "must be in [0, 2^30]");
    if (seed < 0) return Bad("hash_seed", "must be >= 0");
    if (feature_size < 0 || feature_size > kMaxFeatureSize) return Bad("feature_size", "must be in [1, 2^40]");
    spec.id_base = static_cast<int32_t>(id_base);
    spec.hash_seed = static_cast<uint64_t>(seed);
    if (!root.contains("fields") || !root["fields"].is_array() || root["fields"].empty())
      return Bad("fields", "a non-empty array of fields is required");
    std::set<std::string> names, keys;
    for (size_t i = 0; i < root["fields"].size(); ++i) {
      const json& jf = root["fields"][i];
      SpecField f;
      CTRAIN_RETURN_IF_ERROR(Field(spec, jf, i, &f));
      const std::string where = "fields[" + std::to_string(i) + "] (" + f.name + ")";
      if (!names.insert(f.name).second) return Bad(where, "name \"" + f.name + "\" is used twice");
      if (spec.input == SpecInput::kExample) {
        if (f.key == spec.label_key) return Bad(where, "key \"" + f.key + "\" is the label key");
        if (!keys.insert(f.key).second) return Bad(where, "key \"" + f.key + "\" is used by two fields");
      }
      spec.fields.push_back(std::move(f));
    }
    CTRAIN_RETURN_IF_ERROR(Layout(&spec, feature_size));
    return spec;
  }

 private:
  // {"threshold": t} or {"positive_values": [v, ...]}: exactly one, finite numbers.
  Status ParseLabelRule(const json& r, LabelRule* out) const {
    const std::string kUse = "expected {\"threshold\": T} (1 when the label value > T) or {\"positive_values\": "
                             "[V, ...]} (1 when it is one of them)";
    if (!r.is_object() || r.size() != 1) return Bad("label_rule", kUse);
    auto finite = [](const json& v) { return v.is_number() && std::isfinite(v.get<double>()); };
    if (r.contains("threshold")) {
      if (!finite(r["threshold"])) return Bad("label_rule.threshold", "must be a finite number, found " + r["threshold"].dump());
      out->kind = LabelRule::Kind::kThreshold;
      out->threshold = r["threshold"].get<double>();
      return Status::OK();
    }
    if (r.contains("positive_values")) {
      const json& v = r["positive_values"];
      if (!v.is_array() || v.empty()) return Bad("label_rule.positive_values", "must be a non-empty list of numbers");
      for (size_t i = 0; i < v.size(); ++i) {
        if (!finite(v[i]))
          return Bad("label_rule.positive_values[" + std::to_string(i) + "]", "must be a finite number, found " + v[i].dump());
        out->positive_values.push_back(v[i].get<double>());
      }
      out->kind = LabelRule::Kind::kPositiveValues;
      return Status::OK();
    }
    return Bad("label_rule", "unknown rule " + r.begin().key() + ": " + kUse);
  }

  Status Str(const json& j, const char* key, const std::string& where, std::string* out) const {
    if (!j.contains(key)) return Status::OK();
    if (!j[key].is_string()) return Bad(where.empty() ? key : where + "." + key, "expected a string");
    *out = j[key].get<std::string>();
    return Status::OK();
  }
  Status Int(const json& j, const char* key, const std::string& where, int64_t* out) const {
    if (!j.contains(key)) return Status::OK();
    if (!j[key].is_number_integer()) return Bad(where.empty() ? key : where + "." + key, "expected an integer");
    *out = j[key].get<int64_t>();
    return Status::OK();
  }
  Status Bool(const json& j, const char* key, const std::string& where, bool* out) const {
    if (!j.contains(key)) return Status::OK();
    if (!j[key].is_boolean()) return Bad(where + "." + key, "expected true or false");
    *out = j[key].get<bool>();
    return Status::OK();
  }

  Status Field(const FeatureSpec& spec, const json& jf, size_t i, SpecField* f) {
    std::string where = "fields[" + std::to_string(i) + "]";
    if (!jf.is_object()) return Bad(where, "expected an object");
    static const std::set<std::string> kKeys = {"name", "key", "type", "dtype", "length", "var_len", "log1p",
                                                "default", "map", "buckets", "vocabulary", "vocabulary_file",
                                                "ids", "ffm_field", "pooling", "offset"};
    CTRAIN_RETURN_IF_ERROR(Str(jf, "key", where, &f->key));
    f->name = spec.input == SpecInput::kExample ? f->key : "field" + std::to_string(i);
    CTRAIN_RETURN_IF_ERROR(Str(jf, "name", where, &f->name));
    if (f->name.empty()) return Bad(where, "a field needs a \"name\" (or a \"key\")");
    where += " (" + f->name + ")";
    for (const auto& [k, v] : jf.items())
      if (!kKeys.count(k)) return Bad(where, "unknown key \"" + k + "\"");
    if (spec.input == SpecInput::kExample)
      for (const char* k : {"ids", "ffm_field"})
        if (jf.contains(k)) return Bad(where, std::string("\"") + k + "\" applies to input libsvm/libffm, not example");
    if (spec.input != SpecInput::kExample) {  // a text input's field has only these keys
      static const std::set<std::string> kLibSvm = {"name", "ids", "pooling"}, kLibFfm = {"name", "ffm_field", "pooling"};
      const auto& allowed = spec.input == SpecInput::kLibSvm ? kLibSvm : kLibFfm;
      for (const auto& [k, v] : jf.items())
        if (!allowed.count(k))
          return Bad(where, "\"" + k + "\" does not apply to input " + std::string(SpecInputName(spec.input)) +
                                " (its fields take " + (spec.input == SpecInput::kLibSvm ? "name, ids, pooling" : "name, ffm_field, pooling") + ")");
    }
    std::string pooling = "sum";
    CTRAIN_RETURN_IF_ERROR(Str(jf, "pooling", where, &pooling));
    if (pooling == "sum") f->pooling = Pooling::kSum;
    else if (pooling == "mean") f->pooling = Pooling::kMean;
    else return Bad(where + ".pooling", "expected sum|mean, found \"" + pooling + "\"");
    if (jf.contains("offset")) {
      int64_t off = 0;
      CTRAIN_RETURN_IF_ERROR(Int(jf, "offset", where, &off));
      if (off < 0 || off >= kMaxFeatureSize) return Bad(where + ".offset", "must be in [0, 2^40)");
      f->offset_pin = off;
    }

    if (spec.input == SpecInput::kLibSvm) {
      if (!jf.contains("ids") || !jf["ids"].is_array() || jf["ids"].size() != 2 || !jf["ids"][0].is_number_integer() ||
          !jf["ids"][1].is_number_integer())
        return Bad(where, "a libsvm field needs \"ids\": [first, last] (written ids, inclusive)");
      f->ids_lo = jf["ids"][0].get<int64_t>();
      f->ids_hi = jf["ids"][1].get<int64_t>();
      if (f->ids_lo < spec.id_base || f->ids_hi < f->ids_lo || f->ids_hi - spec.id_base >= kMaxFeatureSize)
        return Bad(where + ".ids", "needs id_base (" + std::to_string(spec.id_base) + ") <= first <= last < 2^40");
      f->var_len = true;
      f->size = f->ids_hi - f->ids_lo + 1;
      f->offset_pin = f->ids_lo - spec.id_base;
      return Status::OK();
    }
    if (spec.input == SpecInput::kLibFfm) {
      f->ffm_field = static_cast<int64_t>(i);
      CTRAIN_RETURN_IF_ERROR(Int(jf, "ffm_field", where, &f->ffm_field));
      if (f->ffm_field < 0 || f->ffm_field > (1 << 20)) return Bad(where + ".ffm_field", "must be in [0, 2^20]");
      f->var_len = true;
      return Status::OK();
    }

    if (f->key.empty()) return Bad(where, "an example field needs a \"key\"");
    std::string type;
    CTRAIN_RETURN_IF_ERROR(Str(jf, "type", where, &type));
    if (type == "numeric") f->kind = SpecFieldKind::kNumeric;
    else if (type == "categorical") f->kind = SpecFieldKind::kCategorical;
    else return Bad(where + ".type", "expected numeric|categorical, found \"" + type + "\"");
    const bool numeric = f->kind == SpecFieldKind::kNumeric;
    std::string dtype = numeric ? "float" : "int64";
    CTRAIN_RETURN_IF_ERROR(Str(jf, "dtype", where, &dtype));
    if (dtype == "float" && numeric) f->dtype = io::FeatureKind::kFloat;
    else if (dtype == "int64") f->dtype = io::FeatureKind::kInt64;
    else if (dtype == "bytes" && !numeric) f->dtype = io::FeatureKind::kBytes;
    else return Bad(where + ".dtype", std::string("expected ") + (numeric ? "float|int64" : "int64|bytes") +
                                          ", found \"" + dtype + "\"");
    int64_t length = 1;
    CTRAIN_RETURN_IF_ERROR(Int(jf, "length", where, &length));
    CTRAIN_RETURN_IF_ERROR(Bool(jf, "var_len", where, &f->var_len));
    CTRAIN_RETURN_IF_ERROR(Bool(jf, "log1p", where, &f->log1p));
    if (length < 1 || length > 65536) return Bad(where + ".length", "must be in [1, 65536]");
    if (f->var_len && jf.contains("length")) return Bad(where, "\"length\" and \"var_len\" exclude each other");
    f->length = static_cast<int32_t>(length);
    if (numeric) {
      if (f->var_len) return Bad(where, "var_len applies to categorical fields (a numeric field is one value each)");
      if (jf.contains("pooling")) return Bad(where, "\"pooling\" applies to var_len categorical fields");
      for (const char* k : {"map", "buckets", "vocabulary", "vocabulary_file"})
        if (jf.contains(k)) return Bad(where, std::string("\"") + k + "\" applies to categorical fields");
      if (jf.contains("default")) {
        if (!jf["default"].is_number()) return Bad(where + ".default", "expected a number");
        const double d = jf["default"].get<double>();
        if (!std::isfinite(static_cast<float>(d))) return Bad(where + ".default", "must be a finite float");
        f->default_value = static_cast<float>(d);
      }
      f->size = 1;
      return Status::OK();
    }
    if (f->log1p) return Bad(where, "\"log1p\" applies to numeric fields");
    if (jf.contains("default")) return Bad(where, "\"default\" applies to numeric fields (use var_len for optional ids)");
    if (jf.contains("pooling") && !f->var_len) return Bad(where, "\"pooling\" applies to var_len fields");
    std::string map = jf.contains("vocabulary") || jf.contains("vocabulary_file") ? "vocabulary" : "hash";
    CTRAIN_RETURN_IF_ERROR(Str(jf, "map", where, &map));
    if (map == "hash") f->mapping = IdMapping::kHash;
    else if (map == "identity") f->mapping = IdMapping::kIdentity;
    else if (map == "vocabulary") f->mapping = IdMapping::kVocabulary;
    else return Bad(where + ".map", "expected hash|identity|vocabulary, found \"" + map + "\"");
    if (f->mapping == IdMapping::kVocabulary) {
      if (jf.contains("buckets")) return Bad(where, "\"buckets\" does not apply to map vocabulary");
      if (jf.contains("vocabulary") == jf.contains("vocabulary_file"))
        return Bad(where, "map vocabulary needs exactly one of \"vocabulary\" (a list) or \"vocabulary_file\"");
      if (jf.contains("vocabulary")) {
        if (!jf["vocabulary"].is_array()) return Bad(where + ".vocabulary", "expected a list");
        for (const json& v : jf["vocabulary"]) {
          if (v.is_string()) f->vocabulary.push_back(v.get<std::string>());
          else if (v.is_number_integer()) f->vocabulary.push_back(std::to_string(v.get<int64_t>()));
          else return Bad(where + ".vocabulary", "entries must be strings or integers");
        }
      } else {
        std::string file;
        CTRAIN_RETURN_IF_ERROR(Str(jf, "vocabulary_file", where, &file));
        if (!file.empty() && file[0] != '/') file = base_ + "/" + file;
        StatusOr<std::string> text = io::ReadFileToString(file);
        if (!text.ok()) return Bad(where + ".vocabulary_file", std::string(text.status().message()));
        std::istringstream in(*text);
        for (std::string line; std::getline(in, line);) {
          if (!line.empty() && line.back() == '\r') line.pop_back();
          f->vocabulary.push_back(line);
        }
      }
      std::set<std::string> seen;
      for (size_t v = 0; v < f->vocabulary.size(); ++v)
        if (!seen.insert(f->vocabulary[v]).second)
          return Bad(where + ".vocabulary", "entry " + std::to_string(v) + " \"" + f->vocabulary[v] + "\" is repeated");
      if (f->dtype == io::FeatureKind::kInt64)
        for (const std::string& v : f->vocabulary) {
          char* end = nullptr;
          errno = 0;
          (void)std::strtoll(v.c_str(), &end, 10);
          if (v.empty() || *end != '\0' || errno != 0)
            return Bad(where + ".vocabulary", "\"" + v + "\" is not an int64 (dtype int64)");
        }
      f->size = static_cast<int64_t>(f->vocabulary.size()) + 1;  // 0 = out of vocabulary
    } else {
      if (jf.contains("vocabulary") || jf.contains("vocabulary_file"))
        return Bad(where, "a vocabulary needs map vocabulary");
      CTRAIN_RETURN_IF_ERROR(Int(jf, "buckets", where, &f->buckets));
      if (f->buckets < 1 || f->buckets > kMaxFeatureSize)
        return Bad(where + ".buckets", "map " + map + " needs buckets in [1, 2^40]");
      if (f->mapping == IdMapping::kIdentity && f->dtype != io::FeatureKind::kInt64)
        return Bad(where, "map identity needs dtype int64");
      f->size = f->buckets;
    }
    return Status::OK();
  }

  Status Layout(FeatureSpec* spec, int64_t declared) const {
    int64_t next = 0, end = 0;
    int32_t model_field = 0;
    for (size_t i = 0; i < spec->fields.size(); ++i) {
      SpecField& f = spec->fields[i];
      f.first_model_field = model_field;
      f.offsets.clear();
      if (spec->input == SpecInput::kLibFfm) {
        if (declared <= 0) return Bad("feature_size", "input libffm needs \"feature_size\" (ids as written lie below it)");
        f.size = declared;
        f.offsets.push_back(0);
      } else {
        const int64_t start = f.offset_pin.value_or(next);
        const int32_t n = f.var_len ? 1 : f.length;
        if (f.size > kMaxFeatureSize || start > kMaxFeatureSize - f.size * n)
          return Bad("fields[" + std::to_string(i) + "] (" + f.name + ")", "ids run past 2^40");
        for (int32_t k = 0; k < n; ++k) f.offsets.push_back(start + k * f.size);
        next = std::max(next, start + f.size * n);
        end = std::max(end, next);
      }
      model_field += f.model_fields();
      spec->multi_hot |= f.var_len;
    }
    if (spec->input == SpecInput::kLibSvm) {  // ranges may not overlap: a pair goes to one field
      std::vector<std::pair<int64_t, size_t>> r;
      for (size_t i = 0; i < spec->fields.size(); ++i) r.push_back({spec->fields[i].ids_lo, i});
      std::sort(r.begin(), r.end());
      for (size_t k = 1; k < r.size(); ++k)
        if (spec->fields[r[k - 1].second].ids_hi >= r[k].first)
          return Bad("fields", "libsvm id ranges of " + spec->fields[r[k - 1].second].name + " and " +
                                   spec->fields[r[k].second].name + " overlap");
    }
    if (spec->input == SpecInput::kLibFfm) {
      std::set<int64_t> seen;
      for (const SpecField& f : spec->fields)
        if (!seen.insert(f.ffm_field).second)
          return Bad("fields", "ffm_field " + std::to_string(f.ffm_field) + " is used by two fields");
      end = declared;
    }
    if (declared > 0 && declared < end)
      return Bad("feature_size", std::to_string(declared) + " is smaller than the fields' ids need (" +
                                     std::to_string(end) + ")");
    spec->feature_size = std::max(declared, end);
    spec->field_size = model_field;
    if (spec->field_size > (1 << 20)) return Bad("fields", "more than 2^20 model fields");
    return Status::OK();
  }

  std::string name_, base_;
};

std::string_view KindName(io::FeatureKind k) {
  switch (k) {
    case io::FeatureKind::kBytes: return "bytes";
    case io::FeatureKind::kFloat: return "float";
    case io::FeatureKind::kInt64: return "int64";
  }
  return "?";
}

}  // namespace

std::string_view SpecInputName(SpecInput v) {
  switch (v) {
    case SpecInput::kExample: return "example";
    case SpecInput::kLibSvm: return "libsvm";
    case SpecInput::kLibFfm: return "libffm";
  }
  return "?";
}
std::string_view PoolingName(Pooling v) { return v == Pooling::kMean ? "mean" : "sum"; }
std::string_view IdMappingName(IdMapping v) {
  switch (v) {
    case IdMapping::kHash: return "hash";
    case IdMapping::kIdentity: return "identity";
    case IdMapping::kVocabulary: return "vocabulary";
  }
  return "?";
}

std::string FeatureSpec::ToJson() const {
  json j;
  j["version"] = 1;
  j["input"] = std::string(SpecInputName(input));
  if (input == SpecInput::kExample) {
    j["label"] = label_key;
    j["label_dtype"] = std::string(KindName(label_dtype));
    if (label_rule.kind == LabelRule::Kind::kThreshold) j["label_rule"] = {{"threshold", label_rule.threshold}};
    if (label_rule.kind == LabelRule::Kind::kPositiveValues)
      j["label_rule"] = {{"positive_values", label_rule.positive_values}};
  }
  if (input == SpecInput::kLibSvm) j["id_base"] = id_base;
  if (hash_seed != 0) j["hash_seed"] = hash_seed;
  j["feature_size"] = feature_size;
  json fs = json::array();
  for (const SpecField& f : fields) {
    json e;
    e["name"] = f.name;
    if (input == SpecInput::kLibSvm) {
      e["ids"] = {f.ids_lo, f.ids_hi};
    } else if (input == SpecInput::kLibFfm) {
      e["ffm_field"] = f.ffm_field;
    } else {
      e["key"] = f.key;
      e["type"] = f.kind == SpecFieldKind::kNumeric ? "numeric" : "categorical";
      e["dtype"] = std::string(KindName(f.dtype));
      if (f.var_len) e["var_len"] = true;
      else if (f.length != 1) e["length"] = f.length;
      if (f.kind == SpecFieldKind::kNumeric) {
        if (f.log1p) e["log1p"] = true;
        if (f.default_value) e["default"] = *f.default_value;
      } else {
        e["map"] = std::string(IdMappingName(f.mapping));
        if (f.mapping == IdMapping::kVocabulary) e["vocabulary"] = f.vocabulary;
        else e["buckets"] = f.buckets;
      }
      e["offset"] = f.offsets.at(0);
    }
    if (f.var_len) e["pooling"] = std::string(PoolingName(f.pooling));
    fs.push_back(std::move(e));
  }
  j["fields"] = std::move(fs);
  return j.dump(2) + "\n";
}

StatusOr<FeatureSpec> ParseFeatureSpec(std::string_view text, const std::string& name, const std::string& base_dir) {
  json root;
  const bool toml_syntax = name.size() >= 5 && name.compare(name.size() - 5, 5, ".toml") == 0;
  if (toml_syntax) {
    toml::table tbl;
    try {
      tbl = toml::parse(text, name);
    } catch (const toml::parse_error& e) {
      return InvalidArgumentError(name + ":" + std::to_string(e.source().begin.line) + ":" +
                                  std::to_string(e.source().begin.column) + ": " + std::string(e.description()));
    }
    root = TomlToJson(tbl);
  } else {
    try {
      root = json::parse(text);
    } catch (const json::parse_error& e) {
      return InvalidArgumentError(name + ": not valid JSON (byte " + std::to_string(e.byte) + "): " + e.what());
    }
  }
  return SpecParser(name, base_dir).Parse(root);
}

StatusOr<FeatureSpec> LoadFeatureSpec(const std::string& path) {
  CTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(path));
  const size_t slash = path.find_last_of('/');
  return ParseFeatureSpec(text, path, slash == std::string::npos ? "." : path.substr(0, slash));
}

}  // namespace ctrain::data
