#include "ctrain/train/prediction_output.h"

#include <cmath>
#include <cstdio>

namespace ctrain::train {

StatusOr<std::vector<PredictColumn>> ParsePredictColumns(std::string_view spec) {
  std::vector<PredictColumn> out;
  size_t i = 0;
  while (i <= spec.size()) {
    size_t j = spec.find(',', i);
    if (j == std::string_view::npos) j = spec.size();
    std::string_view name = spec.substr(i, j - i);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    PredictColumn c;
    if (name == "prediction") c = PredictColumn::kPrediction;
    else if (name == "label") c = PredictColumn::kLabel;
    else if (name == "index" || name == "id") c = PredictColumn::kIndex;
    else
      return InvalidArgumentError("--output-columns '" + std::string(spec) + "': unknown column '" +
                                  std::string(name) + "' (expected prediction, label, index or id, comma-separated)");
    for (PredictColumn have : out)
      if (have == c)
        return InvalidArgumentError("--output-columns '" + std::string(spec) + "': column '" + std::string(name) +
                                    "' given twice");
    out.push_back(c);
    i = j + 1;
  }
  return out;
}

Status CheckPredictColumns(const std::vector<PredictColumn>& columns, const Dataset& data) {
  for (PredictColumn c : columns)
    if (c == PredictColumn::kLabel && !HasLabels(data))
      return InvalidArgumentError(
          "--output-columns asks for the label, but the input has no label column (read as unlabelled: a LibSVM "
          "line starting with an id:value pair, a Criteo row of 39 cells, or --no-label)");
  return Status::OK();
}

bool HasLabels(const Dataset& data) {
  for (float l : data.label_span())
    if (std::isnan(l)) return false;
  return true;
}

namespace {
std::string Where(const LoadStats::Dropped& d) {
  return d.file + ": record " + std::to_string(d.where.index) + " at offset " + std::to_string(d.where.offset);
}
}  // namespace

std::vector<std::string> DescribeDropped(const std::vector<LoadStats::Dropped>& dropped, bool output_lines) {
  std::vector<std::string> out;
  for (const LoadStats::Dropped& d : dropped) {
    std::string line = Where(d) + " (" + std::to_string(d.where.bytes) + " bytes";
    if (d.where.records > 1) line += ", " + std::to_string(d.where.records) + " records";
    line += ") dropped as corrupt";
    if (!output_lines) {
      out.push_back(line);
      continue;
    }
    line += "; output line";
    if (d.where.records > 1)
      line += "s " + std::to_string(d.first_record + 1) + "-" + std::to_string(d.first_record + d.where.records) +
              " are nan";
    else
      line += " " + std::to_string(d.first_record + 1) + " is nan";
    out.push_back(line);
  }
  return out;
}

Status CheckDroppedAlignable(const std::vector<LoadStats::Dropped>& dropped) {
  for (const LoadStats::Dropped& d : dropped)
    if (!d.where.exact)
      return FailedPreconditionError(
          Where(d) + ": a corrupt length header was skipped by scanning " + std::to_string(d.where.bytes) +
          " bytes for the next valid record, so the number of records lost is unknown and predict cannot keep one "
          "output line per input record; repair the file, or run without --skip-corrupt-records to stop at the "
          "damage");
  return Status::OK();
}

std::string FormatPredictions(const std::vector<PredictColumn>& columns, const Dataset& data,
                              const std::vector<float>& probs, const std::vector<LoadStats::Dropped>& dropped) {
  std::string out;
  out.reserve(static_cast<size_t>(data.size()) * 12 * columns.size());
  char num[32];
  int64_t index = 0;
  auto line = [&](const float* label, const float* prob) {
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c) out += '\t';
      switch (columns[c]) {
        case PredictColumn::kIndex: out += std::to_string(index); break;
        case PredictColumn::kLabel:
          if (label == nullptr) out += "nan";
          else out.append(num, std::snprintf(num, sizeof num, "%g", *label));
          break;
        case PredictColumn::kPrediction:
          if (prob == nullptr) out += "nan";
          else out.append(num, std::snprintf(num, sizeof num, "%.9g", *prob));
          break;
      }
    }
    out += '\n';
    ++index;
  };
  size_t d = 0;
  for (int64_t r = 0; r <= data.size(); ++r) {
    for (; d < dropped.size() && dropped[d].row == r; ++d)
      for (uint64_t k = 0; k < dropped[d].where.records; ++k) line(nullptr, nullptr);
    if (r < data.size()) line(data.labels() + r, probs.data() + r);
  }
  return out;
}

}  // namespace ctrain::train
