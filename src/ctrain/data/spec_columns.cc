#include "ctrain/data/spec_columns.h"

#include <memory>
#include <span>
#include <string>
#include <utility>

#include "ctrain/data/spec_reader.h"

namespace ctrain::data {

SpecColumnsBuilder::SpecColumnsBuilder(const FeatureSpec& spec) : spec_(spec) { cols_ = Empty(); }

SpecColumns SpecColumnsBuilder::Empty() const {
  SpecColumns c;
  for (const SpecField& f : spec_.fields) {
    SpecColumn col;
    col.name = f.name;
    if (spec_.input != SpecInput::kExample || f.var_len) {
      col.kind = SpecColumn::Kind::kBag;
      col.weighted = spec_.input != SpecInput::kExample || f.pooling == Pooling::kMean;
    } else {
      col.kind = f.kind == SpecFieldKind::kNumeric ? SpecColumn::Kind::kDense : SpecColumn::Kind::kIds;
      col.width = f.length;
    }
    c.columns.push_back(std::move(col));
  }
  return c;
}

Status SpecColumnsBuilder::Append(const SpecRow& row) {
  size_t field = 0, entry = 0;  // model field (index into lengths), position in ids/values
  auto bad = [&](const SpecField& f) {
    return InternalError("spec columns: the row does not have the layout of the spec " + spec_.source +
                         " at entry '" + f.name + "'");
  };
  for (size_t i = 0; i < spec_.fields.size(); ++i) {
    const SpecField& f = spec_.fields[i];
    SpecColumn& col = cols_.columns[i];
    if (col.kind == SpecColumn::Kind::kBag) {
      if (field >= row.lengths.size()) return bad(f);
      const size_t n = static_cast<size_t>(row.lengths[field++]);
      if (entry + n > row.ids.size() || entry + n > row.values.size()) return bad(f);
      col.offsets.push_back(static_cast<int64_t>(col.ids.size()));
      col.ids.insert(col.ids.end(), row.ids.begin() + entry, row.ids.begin() + entry + n);
      if (col.weighted) col.values.insert(col.values.end(), row.values.begin() + entry, row.values.begin() + entry + n);
      entry += n;
      continue;
    }
    for (int32_t k = 0; k < col.width; ++k) {
      if (field >= row.lengths.size() || row.lengths[field] != 1 || entry >= row.ids.size()) return bad(f);
      ++field;
      if (col.kind == SpecColumn::Kind::kDense) col.values.push_back(row.values[entry]);
      else col.ids.push_back(row.ids[entry]);
      ++entry;
    }
  }
  if (field != row.lengths.size() || entry != row.ids.size()) return bad(spec_.fields.back());
  cols_.labels.push_back(row.label);
  return Status::OK();
}

Status SpecColumnsBuilder::AppendBatch(const Batch& batch) {
  const int32_t F = spec_.field_size;
  if (batch.field_size != F || batch.variable_length() || batch.multi_hot() != spec_.multi_hot)
    return InvalidArgumentError("a batch of field_size " + std::to_string(batch.field_size) +
                                (batch.multi_hot() ? " (multi-hot)" : batch.variable_length() ? " (variable length)" : "") +
                                " does not have the layout of the spec " + spec_.source + " (field_size " +
                                std::to_string(F) + (spec_.multi_hot ? ", multi-hot)" : ")"));
  // All or nothing: on an error every array is cut back to its size before the batch.
  struct Sizes { size_t values, ids, offsets; };
  std::vector<Sizes> before;
  for (const SpecColumn& c : cols_.columns) before.push_back({c.values.size(), c.ids.size(), c.offsets.size()});
  const size_t labels_before = cols_.labels.size();
  SpecRow row;
  for (int64_t b = 0; b < batch.size(); ++b) {
    row.Clear();
    row.label = batch.labels[static_cast<size_t>(b)];
    const std::span<const int64_t> ids = batch.row_ids(b);
    const std::span<const float> values = batch.row_values(b);
    row.ids.assign(ids.begin(), ids.end());
    row.values.assign(values.begin(), values.end());
    for (int32_t f = 0; f < F; ++f)
      row.lengths.push_back(batch.multi_hot() ? static_cast<int32_t>(batch.field_splits[static_cast<size_t>(b * F + f + 1)] -
                                                                      batch.field_splits[static_cast<size_t>(b * F + f)])
                                              : 1);
    if (Status st = Append(row); !st.ok()) {
      cols_.labels.resize(labels_before);
      for (size_t i = 0; i < before.size(); ++i) {
        cols_.columns[i].values.resize(before[i].values);
        cols_.columns[i].ids.resize(before[i].ids);
        cols_.columns[i].offsets.resize(before[i].offsets);
      }
      return InvalidArgumentError("batch row " + std::to_string(b) + ": " + std::string(st.message()));
    }
  }
  return Status::OK();
}

SpecColumns SpecColumnsBuilder::Take() {
  SpecColumns out = std::move(cols_);
  cols_ = Empty();
  return out;
}

StatusOr<SpecColumns> ReadSpecColumns(const std::vector<std::string>& inputs, const FeatureSpec& spec,
                                      std::vector<uint64_t>* records) {
  SpecColumnsBuilder b(spec);
  SpecRow row;
  for (const std::string& path : inputs) {
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<SpecReader> reader, SpecReader::Open(path, spec));
    for (;;) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, reader->Next(&row));
      if (!more) break;
      CTRAIN_RETURN_IF_ERROR(b.Append(row));
    }
    if (reader->records() == 0) return InvalidArgumentError(path + ": no records");
    if (records != nullptr) records->push_back(reader->records());
  }
  return b.Take();
}

}  // namespace ctrain::data
