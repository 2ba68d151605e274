// Append-only vocabulary extension for daily retraining
// (docs/training.md#daily-retraining): `ctrain convert --feature-map OLD`
// grows OLD with the new input's categories without moving any of OLD's ids,
// so a model trained on OLD's ids can be warm-started on the extended ids.
//
// Thread safety: plain functions.
#pragma once

#include <cstdint>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/io/criteo.h"

namespace ctrain::io {

// `base` extended by `fresh` (a vocabulary built from the new input with the
// min count that decides which new categories get an id): every id of `base`
// keeps its name (numeric fields, <unk>s, categories); each category of
// `fresh` that `base` maps to its field's <unk> gets a new id from
// base.size() on, in `fresh`'s id order (C1, C2, ..., C26 in turn, by
// descending count, ties by ascending byte string): deterministic. *added (if
// not null) = the number of new ids. `name` names the result in errors.
// Errors: ParseFeatureMap's (a base that is not a complete map).
StatusOr<CriteoVocabulary> ExtendVocabulary(const CriteoVocabulary& base, const CriteoVocabulary& fresh,
                                            std::string_view name, int64_t* added);

// The entries ("name id" lines) of a vocabulary's feature map: 13 numeric,
// 26 <unk> and every category with its own id.
int64_t VocabularyEntries(const CriteoVocabulary& v);

}  // namespace ctrain::io
