// tf.train.Example wire codec. See example.h and docs/formats/example.md.
//
// Structure: a handful of inline wire primitives (varint, length, skip), then
// walkers for each message level that call a "sink" for the values of one
// Feature. Sinks decide what to keep: a fixed caller buffer (seed fast path),
// vectors (general path) or only counts (inspection). Errors on the hot path are
// recorded in a small Ctx (kind + position) and turned into a Status once.
#include "ctrain/io/example.h"

#include <cmath>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <functional>

#if defined(__BMI2__)
#include <immintrin.h>
#endif

namespace ctrain::io {

static_assert(std::endian::native == std::endian::little,
              "FloatList values are little-endian fixed32; add byte swapping for big-endian hosts");

namespace {

// Tags (field_number << 3 | wire_type) used by the Example messages.
constexpr uint32_t kTag1Len = (1 << 3) | 2;      // Example.features, Features.feature, entry key,
                                                 // Feature.bytes_list, *List.value (packed / bytes)
constexpr uint32_t kTag2Len = (2 << 3) | 2;      // entry value, Feature.float_list
constexpr uint32_t kTag3Len = (3 << 3) | 2;      // Feature.int64_list
constexpr uint32_t kTag1Varint = (1 << 3) | 0;   // Int64List.value unpacked
constexpr uint32_t kTag1Fixed32 = (1 << 3) | 5;  // FloatList.value unpacked

constexpr int kMaxGroupDepth = 64;  // protobuf's own recursion limit is 100

enum class Err : uint8_t {
  kNone,
  kTruncatedVarint,
  kVarintTooLong,
  kFieldZero,
  kTagTooLarge,
  kLengthOverrun,
  kTruncatedFixed32,
  kTruncatedFixed64,
  kPackedFloatSize,
  kBadWireType,
  kStrayEndGroup,
  kMismatchedEndGroup,
  kUnterminatedGroup,
  kGroupTooDeep,
};

// Parse state shared by the walkers: the record start (for byte offsets), the
// unknown-field counter and the first error.
struct Ctx {
  explicit Ctx(const uint8_t* b) : base(b) {}
  const uint8_t* base;
  int64_t unknown = 0;
  Err err = Err::kNone;
  const uint8_t* at = nullptr;
  uint64_t a = 0, b = 0;

  bool Fail(Err e, const uint8_t* where, uint64_t x = 0, uint64_t y = 0) {
    err = e;
    at = where;
    a = x;
    b = y;
    return false;
  }

  Status ToStatus() const {
    std::string m = "malformed tf.train.Example: ";
    switch (err) {
      case Err::kNone: m += "internal error (no error recorded)"; break;
      case Err::kTruncatedVarint: m += "truncated varint"; break;
      case Err::kVarintTooLong: m += "varint longer than 10 bytes"; break;
      case Err::kFieldZero: m += "invalid field number 0"; break;
      case Err::kTagTooLarge: m += "tag larger than 32 bits"; break;
      case Err::kLengthOverrun:
        m += "length " + std::to_string(a) + " exceeds the " + std::to_string(b) + " bytes left";
        break;
      case Err::kTruncatedFixed32: m += "truncated fixed32"; break;
      case Err::kTruncatedFixed64: m += "truncated fixed64"; break;
      case Err::kPackedFloatSize:
        m += "packed float payload of " + std::to_string(a) + " bytes is not a multiple of 4";
        break;
      case Err::kBadWireType: m += "invalid wire type " + std::to_string(a); break;
      case Err::kStrayEndGroup: m += "end-group tag without a start-group"; break;
      case Err::kMismatchedEndGroup:
        m += "end-group tag for field " + std::to_string(a) + " closes a group of field " +
             std::to_string(b);
        break;
      case Err::kUnterminatedGroup: m += "unterminated group"; break;
      case Err::kGroupTooDeep: m += "groups nested deeper than " + std::to_string(kMaxGroupDepth); break;
    }
    m += " at byte " + std::to_string(at - base);
    return DataLossError(m);
  }
};

[[gnu::noinline]] bool ReadVarintSlow(const uint8_t*& p, const uint8_t* end, uint64_t* v, Ctx& c) {
  const uint8_t* start = p;
  uint64_t r = 0;
  for (int i = 0; i < 10; ++i) {
    if (p >= end) return c.Fail(Err::kTruncatedVarint, start);
    const uint8_t byte = *p++;
    r |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);  // the 10th byte keeps 1 bit, as protobuf
    if (byte < 0x80) {
      *v = r;
      return true;
    }
  }
  return c.Fail(Err::kVarintTooLong, start);
}

[[gnu::always_inline]] inline bool ReadVarint(const uint8_t*& p, const uint8_t* end, uint64_t* v, Ctx& c) {
  if (p < end && *p < 0x80) [[likely]] {
    *v = *p++;
    return true;
  }
  if (end - p >= 10) [[likely]] {  // no bounds checks needed
    uint64_t r = *p & 0x7f;
    for (int i = 1; i < 10; ++i) {
      const uint8_t byte = p[i];
      r |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if (byte < 0x80) {
        p += i + 1;
        *v = r;
        return true;
      }
    }
    return c.Fail(Err::kVarintTooLong, p);
  }
  return ReadVarintSlow(p, end, v, c);
}

// Joins the 7-bit groups of up to 8 varint bytes (high bits already cleared),
// least significant first, into one 56-bit value.
[[gnu::always_inline]] inline uint64_t CompactVarintBytes(uint64_t x) {
#if defined(__BMI2__) && !defined(__znver1__) && !defined(__znver2__)  // pext is microcoded there
  return _pext_u64(x, 0x7f7f7f7f7f7f7f7full);
#endif
  x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);  // 14-bit groups
  x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);  // 28-bit groups
  return ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
}

// Decodes one varint at p. REQUIRES: at least 10 readable bytes at p. Returns
// false (p unchanged) for a varint longer than 10 bytes. Up to 8 bytes are
// decoded branch-free from one 8-byte load.
[[gnu::always_inline]] inline bool DecodeVarintUnchecked(const uint8_t*& p, uint64_t* v) {
  if (*p < 0x80) {
    *v = *p++;
    return true;
  }
  uint64_t x;
  std::memcpy(&x, p, 8);
  const uint64_t stop = ~x & 0x8080808080808080ull;  // terminator bytes have the high bit clear
  if (stop != 0) [[likely]] {
    const int bits = std::countr_zero(stop) + 1;  // through the terminator byte
    x &= bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    *v = CompactVarintBytes(x & 0x7f7f7f7f7f7f7f7full);
    p += bits >> 3;
    return true;
  }
  // 9 or 10 bytes.
  uint64_t r = CompactVarintBytes(x & 0x7f7f7f7f7f7f7f7full);
  r |= static_cast<uint64_t>(p[8] & 0x7f) << 56;
  if (p[8] < 0x80) {
    *v = r;
    p += 9;
    return true;
  }
  if (p[9] >= 0x80) return false;
  *v = r | (static_cast<uint64_t>(p[9]) << 63);  // the 10th byte keeps 1 bit, as protobuf
  p += 10;
  return true;
}

[[gnu::always_inline]] inline bool ReadTag(const uint8_t*& p, const uint8_t* end, uint32_t* tag, Ctx& c) {
  const uint8_t* start = p;
  uint64_t v;
  if (!ReadVarint(p, end, &v, c)) return false;
  if (v > 0xffffffffu) [[unlikely]] return c.Fail(Err::kTagTooLarge, start);
  if ((v >> 3) == 0) [[unlikely]] return c.Fail(Err::kFieldZero, start);
  *tag = static_cast<uint32_t>(v);
  return true;
}

// Reads a length prefix and the payload bounds [*b, *e); advances p past the payload.
[[gnu::always_inline]] inline bool ReadLen(const uint8_t*& p, const uint8_t* end, const uint8_t** b, const uint8_t** e,
                    Ctx& c) {
  const uint8_t* start = p;
  uint64_t n;
  if (!ReadVarint(p, end, &n, c)) return false;
  if (n > static_cast<uint64_t>(end - p)) [[unlikely]] {
    return c.Fail(Err::kLengthOverrun, start, n, static_cast<uint64_t>(end - p));
  }
  *b = p;
  p += n;
  *e = p;
  return true;
}

// Skips the value of a field whose tag (read at tag_at) was already consumed.
bool SkipField(uint32_t tag, const uint8_t* tag_at, const uint8_t*& p, const uint8_t* end, Ctx& c,
               int depth) {
  switch (tag & 7) {
    case 0: {
      uint64_t v;
      return ReadVarint(p, end, &v, c);
    }
    case 1:
      if (end - p < 8) return c.Fail(Err::kTruncatedFixed64, p);
      p += 8;
      return true;
    case 2: {
      const uint8_t *b, *e;
      return ReadLen(p, end, &b, &e, c);
    }
    case 3: {
      if (depth >= kMaxGroupDepth) return c.Fail(Err::kGroupTooDeep, tag_at);
      const uint32_t field = tag >> 3;
      while (true) {
        if (p >= end) return c.Fail(Err::kUnterminatedGroup, tag_at);
        const uint8_t* at = p;
        uint32_t t;
        if (!ReadTag(p, end, &t, c)) return false;
        if ((t & 7) == 4) {
          if ((t >> 3) != field) return c.Fail(Err::kMismatchedEndGroup, at, t >> 3, field);
          return true;
        }
        if (!SkipField(t, at, p, end, c, depth + 1)) return false;
      }
    }
    case 4:
      return c.Fail(Err::kStrayEndGroup, tag_at);
    case 5:
      if (end - p < 4) return c.Fail(Err::kTruncatedFixed32, p);
      p += 4;
      return true;
    default:
      return c.Fail(Err::kBadWireType, tag_at, tag & 7);
  }
}

inline bool SkipUnknown(uint32_t tag, const uint8_t* tag_at, const uint8_t*& p, const uint8_t* end,
                        Ctx& c) {
  ++c.unknown;
  return SkipField(tag, tag_at, p, end, c, 0);
}

// A sink receives the contents of one Feature (possibly spread over several
// `value` fields of a map entry, which protobuf merges):
//   Begin(kind)           a list field of `kind` starts; if kind differs from the
//                         current one the oneof switches and earlier values are dropped
//   Bytes(p, n)           one bytes value
//   Floats(p, n)          n little-endian floats at p (unaligned)
//   Int64(v)              one int64 value
template <class Sink>
bool WalkFeature(const uint8_t* p, const uint8_t* end, Sink& s, Ctx& c) {
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!ReadTag(p, end, &tag, c)) return false;
    const uint8_t *b, *e;
    if (tag == kTag1Len) {  // bytes_list
      if (!ReadLen(p, end, &b, &e, c)) return false;
      s.Begin(FeatureKind::kBytes);
      while (b < e) {
        const uint8_t* at2 = b;
        uint32_t t;
        if (!ReadTag(b, e, &t, c)) return false;
        if (t == kTag1Len) {
          const uint8_t *vb, *ve;
          if (!ReadLen(b, e, &vb, &ve, c)) return false;
          s.Bytes(vb, static_cast<size_t>(ve - vb));
        } else if (!SkipUnknown(t, at2, b, e, c)) {
          return false;
        }
      }
    } else if (tag == kTag2Len) {  // float_list
      if (!ReadLen(p, end, &b, &e, c)) return false;
      s.Begin(FeatureKind::kFloat);
      while (b < e) {
        const uint8_t* at2 = b;
        uint32_t t;
        if (!ReadTag(b, e, &t, c)) return false;
        if (t == kTag1Len) {  // packed
          const uint8_t *vb, *ve;
          if (!ReadLen(b, e, &vb, &ve, c)) return false;
          const size_t n = static_cast<size_t>(ve - vb);
          if (n % 4 != 0) return c.Fail(Err::kPackedFloatSize, at2, n);
          s.Floats(vb, n / 4);
        } else if (t == kTag1Fixed32) {  // unpacked
          if (e - b < 4) return c.Fail(Err::kTruncatedFixed32, b);
          s.Floats(b, 1);
          b += 4;
        } else if (!SkipUnknown(t, at2, b, e, c)) {
          return false;
        }
      }
    } else if (tag == kTag3Len) {  // int64_list
      if (!ReadLen(p, end, &b, &e, c)) return false;
      s.Begin(FeatureKind::kInt64);
      while (b < e) {
        const uint8_t* at2 = b;
        uint32_t t;
        if (!ReadTag(b, e, &t, c)) return false;
        uint64_t v;
        if (t == kTag1Len) {  // packed
          const uint8_t *vb, *ve;
          if (!ReadLen(b, e, &vb, &ve, c)) return false;
          // Hot loop (ids): while 10 bytes remain, decode every varint that ends in
          // the next 8 bytes from one load (the loop-carried chain is one load and
          // one lzcnt per word, not per value); then the checked tail.
          while (ve - vb >= 10) {
            uint64_t x;
            std::memcpy(&x, vb, 8);
            uint64_t stop = ~x & 0x8080808080808080ull;  // high bit of each terminator byte
            if (stop == 0) {  // a varint of 9 or 10 bytes starts here
              if (!DecodeVarintUnchecked(vb, &v)) return c.Fail(Err::kVarintTooLong, vb);
              s.Int64(static_cast<int64_t>(v));
              continue;
            }
            vb += (64 - std::countl_zero(stop)) >> 3;  // through the last terminator
            x &= 0x7f7f7f7f7f7f7f7full;
            int from = 0;  // first bit of the current varint
            do {
              const int to = std::countr_zero(stop) + 1;  // one past its terminator byte
              const uint64_t bits = (to == 64 ? x : x & ((uint64_t{1} << to) - 1)) >> from;
              s.Int64(static_cast<int64_t>(CompactVarintBytes(bits)));
              from = to;
              stop &= stop - 1;
            } while (stop != 0);
          }
          while (vb < ve) {
            if (!ReadVarint(vb, ve, &v, c)) return false;
            s.Int64(static_cast<int64_t>(v));
          }
        } else if (t == kTag1Varint) {  // unpacked
          if (!ReadVarint(b, e, &v, c)) return false;
          s.Int64(static_cast<int64_t>(v));
        } else if (!SkipUnknown(t, at2, b, e, c)) {
          return false;
        }
      }
    } else if (!SkipUnknown(tag, at, p, end, c)) {
      return false;
    }
  }
  return true;
}

// One map entry of Features.feature.
struct Entry {
  const uint8_t* begin = nullptr;  // entry payload
  const uint8_t* end = nullptr;
  std::string_view key;            // last `key` field (protobuf: last one wins); "" if none
  const uint8_t* value_begin = nullptr;  // first `value` field payload
  const uint8_t* value_end = nullptr;
  int32_t value_fields = 0;
};

inline bool ParseEntry(const uint8_t* p, const uint8_t* end, Entry* en, Ctx& c) {
  en->begin = p;
  en->end = end;
  en->key = {};
  en->value_fields = 0;
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!ReadTag(p, end, &tag, c)) return false;
    const uint8_t *b, *e;
    if (tag == kTag1Len) {
      if (!ReadLen(p, end, &b, &e, c)) return false;
      en->key = std::string_view(reinterpret_cast<const char*>(b), static_cast<size_t>(e - b));
    } else if (tag == kTag2Len) {
      if (!ReadLen(p, end, &b, &e, c)) return false;
      if (en->value_fields++ == 0) {
        en->value_begin = b;
        en->value_end = e;
      }
    } else if (!SkipUnknown(tag, at, p, end, c)) {
      return false;
    }
  }
  return true;
}

// Feeds every `value` field of the entry, in order, to the sink (merge semantics).
template <class Sink>
bool WalkEntryValues(const uint8_t* begin, const uint8_t* end, const uint8_t* vb, const uint8_t* ve,
                     int32_t value_fields, Sink& s, Ctx& c) {
  if (value_fields == 0) return true;
  if (value_fields == 1) [[likely]] return WalkFeature(vb, ve, s, c);
  const uint8_t* p = begin;  // rare: rescan; the framing was checked by ParseEntry
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!ReadTag(p, end, &tag, c)) return false;
    const uint8_t *b, *e;
    if (tag == kTag2Len) {
      if (!ReadLen(p, end, &b, &e, c)) return false;
      if (!WalkFeature(b, e, s, c)) return false;
    } else if (!SkipField(tag, at, p, end, c, 0)) {  // already counted by ParseEntry
      return false;
    }
  }
  return true;
}

template <class Sink>
bool WalkEntryValues(const Entry& en, Sink& s, Ctx& c) {
  return WalkEntryValues(en.begin, en.end, en.value_begin, en.value_end, en.value_fields, s, c);
}

// Calls on_entry(const Entry&) -> bool for every map entry in wire order.
template <class OnEntry>
bool WalkExample(const uint8_t* p, const uint8_t* end, OnEntry&& on_entry, Ctx& c) {
  Entry en;
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!ReadTag(p, end, &tag, c)) return false;
    if (tag != kTag1Len) {
      if (!SkipUnknown(tag, at, p, end, c)) return false;
      continue;
    }
    const uint8_t *fb, *fe;  // Features
    if (!ReadLen(p, end, &fb, &fe, c)) return false;
    while (fb < fe) {
      const uint8_t* at2 = fb;
      uint32_t t;
      if (!ReadTag(fb, fe, &t, c)) return false;
      if (t != kTag1Len) {
        if (!SkipUnknown(t, at2, fb, fe, c)) return false;
        continue;
      }
      const uint8_t *eb, *ee;
      if (!ReadLen(fb, fe, &eb, &ee, c)) return false;
      if (!ParseEntry(eb, ee, &en, c)) return false;
      if (!on_entry(en)) return false;
    }
  }
  return true;
}

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

// --- encoding ---

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
  if (lab.begin == nullptr) return Missing(lk);
  if (idn.begin == nullptr) return Missing(ik);
  if (val.begin == nullptr) return Missing(vk);

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
