// The tf.train.Example wire level shared by the codec's files (private to
// src/ctrain/io: example.cc decodes, example_encode.cc encodes): the message
// tags, the parse context and its errors, the wire primitives (varint, length,
// skip) and the walkers that hand one Feature's values to a sink. Spec and
// accepted inputs: example.h, docs/formats/example.md.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__BMI2__)
#include <immintrin.h>
#endif

#include "ctrain/base/status.h"
#include "ctrain/io/example.h"

namespace ctrain::io::example_wire {


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

[[gnu::noinline]] inline bool ReadVarintSlow(const uint8_t*& p, const uint8_t* end, uint64_t* v, Ctx& c) {
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
inline bool SkipField(uint32_t tag, const uint8_t* tag_at, const uint8_t*& p, const uint8_t* end, Ctx& c,
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

}  // namespace ctrain::io::example_wire
