// tf.train.Example encoding (EncodeExample, example.h): the exact bytes
// TensorFlow's SerializeToString writes for the same features in the same order.
#include <cassert>
#include <cstring>

#include "ctrain/io/example.h"
#include "ctrain/io/example_wire.h"

namespace ctrain::io {
namespace {

using namespace example_wire;


inline size_t VarintSize(uint64_t v) { return (static_cast<size_t>(std::bit_width(v | 1)) + 6) / 7; }

inline char* PutVarint(char* w, uint64_t v) {
  while (v >= 0x80) {
    *w++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *w++ = static_cast<char>(v);
  return w;
}

// Size of a length-delimited field (1-byte tag) with a payload of n bytes.
inline size_t LenFieldSize(size_t n) { return 1 + VarintSize(n) + n; }

inline char* PutLenHeader(char* w, uint32_t tag, size_t n) {
  *w++ = static_cast<char>(tag);
  return PutVarint(w, n);
}

size_t Int64PayloadSize(std::span<const int64_t> v) {
  size_t n = 0;
  for (int64_t x : v) n += VarintSize(static_cast<uint64_t>(x));
  return n;
}

// Size of the list message (FloatList / Int64List / BytesList payload).
size_t ListPayloadSize(const ParsedFeature& f) {
  switch (f.kind) {
    case FeatureKind::kBytes: {
      size_t n = 0;
      for (const auto& s : f.bytes) n += LenFieldSize(s.size());
      return n;
    }
    case FeatureKind::kFloat:
      return f.floats.empty() ? 0 : LenFieldSize(f.floats.size() * sizeof(float));
    case FeatureKind::kInt64:
      return f.int64s.empty() ? 0 : LenFieldSize(Int64PayloadSize(f.int64s));
  }
  return 0;
}

inline uint32_t FeatureTag(FeatureKind k) {
  switch (k) {
    case FeatureKind::kBytes: return kTag1Len;
    case FeatureKind::kFloat: return kTag2Len;
    case FeatureKind::kInt64: return kTag3Len;
  }
  return kTag1Len;
}

char* PutFloats(char* w, std::span<const float> v) {
  if (v.empty()) return w;
  w = PutLenHeader(w, kTag1Len, v.size() * sizeof(float));
  std::memcpy(w, v.data(), v.size() * sizeof(float));
  return w + v.size() * sizeof(float);
}

char* PutInt64s(char* w, std::span<const int64_t> v, size_t payload) {
  if (v.empty()) return w;
  w = PutLenHeader(w, kTag1Len, payload);
  for (int64_t x : v) w = PutVarint(w, static_cast<uint64_t>(x));
  return w;
}

// Writes a map entry {key, value: Feature{<tag>: <list of list_size bytes>}}; the list
// bytes are written by put_list(w) -> w.
template <class PutList>
char* PutEntry(char* w, std::string_view key, uint32_t feature_tag, size_t list_size, PutList&& put_list) {
  const size_t feature_size = LenFieldSize(list_size);
  const size_t entry_size = LenFieldSize(key.size()) + LenFieldSize(feature_size);
  w = PutLenHeader(w, kTag1Len, entry_size);
  w = PutLenHeader(w, kTag1Len, key.size());
  std::memcpy(w, key.data(), key.size());
  w += key.size();
  w = PutLenHeader(w, kTag2Len, feature_size);
  w = PutLenHeader(w, feature_tag, list_size);
  return put_list(w);
}

inline size_t EntryFieldSize(std::string_view key, size_t list_size) {
  return LenFieldSize(LenFieldSize(key.size()) + LenFieldSize(LenFieldSize(list_size)));
}

}  // namespace

void EncodeSeedExample(float label, std::span<const int64_t> ids, std::span<const float> values,
                       const SeedSchema& schema, std::string* out) {
  assert(ids.size() == values.size());
  const size_t label_list = LenFieldSize(sizeof(float));
  const size_t ids_payload = Int64PayloadSize(ids);
  const size_t ids_list = ids.empty() ? 0 : LenFieldSize(ids_payload);
  const size_t values_list = values.empty() ? 0 : LenFieldSize(values.size() * sizeof(float));
  const size_t features = EntryFieldSize(schema.label_key, label_list) +
                          EntryFieldSize(schema.ids_key, ids_list) +
                          EntryFieldSize(schema.values_key, values_list);
  const size_t total = LenFieldSize(features);
  const size_t old = out->size();
  out->resize(old + total);
  char* w = out->data() + old;
  w = PutLenHeader(w, kTag1Len, features);
  w = PutEntry(w, schema.label_key, kTag2Len, label_list,
               [&](char* q) { return PutFloats(q, std::span<const float>(&label, 1)); });
  w = PutEntry(w, schema.ids_key, kTag3Len, ids_list, [&](char* q) { return PutInt64s(q, ids, ids_payload); });
  w = PutEntry(w, schema.values_key, kTag2Len, values_list, [&](char* q) { return PutFloats(q, values); });
  assert(w == out->data() + out->size());
  (void)w;
}

void EncodeExample(std::span<const std::pair<std::string, ParsedFeature>> features, std::string* out) {
  size_t total_features = 0;
  for (const auto& [key, f] : features) total_features += EntryFieldSize(key, ListPayloadSize(f));
  const size_t old = out->size();
  out->resize(old + LenFieldSize(total_features));
  char* w = out->data() + old;
  w = PutLenHeader(w, kTag1Len, total_features);
  for (const auto& kv : features) {  // (no structured binding: captured below, clang < 16)
    const std::string& key = kv.first;
    const ParsedFeature& f = kv.second;
    const size_t list = ListPayloadSize(f);
    w = PutEntry(w, key, FeatureTag(f.kind), list, [&](char* q) {
      switch (f.kind) {
        case FeatureKind::kBytes:
          for (const auto& s : f.bytes) {
            q = PutLenHeader(q, kTag1Len, s.size());
            std::memcpy(q, s.data(), s.size());
            q += s.size();
          }
          return q;
        case FeatureKind::kFloat:
          return PutFloats(q, f.floats);
        case FeatureKind::kInt64:
          return PutInt64s(q, f.int64s, Int64PayloadSize(f.int64s));
      }
      return q;
    });
  }
  assert(w == out->data() + out->size());
  (void)w;
}

}  // namespace ctrain::io
