// The lines `ctrain predict` writes: exactly one per input record, in input
// order (docs/training.md#eval-and-predict).
//
// Columns (--output-columns, comma-separated, tab-separated in the output):
//   prediction  click probability, %.9g
//   label       the record's label as read (0 or 1)
//   index       0-based record index over all inputs in order, counting
//               dropped records (also spelled "id": the inputs carry no id
//               column of their own, the index identifies the record)
// A record dropped on purpose (TFRecord --skip-corrupt-records) still gets
// its line: "nan" in the prediction and label columns, its index in the
// index column. A dropped region whose record count is unknown (a corrupt
// length header: the reader resynchronised) cannot keep that promise, so
// CheckDroppedAlignable refuses it.
//
// Thread safety: plain functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/train/dataset.h"

namespace ctrain::train {

enum class PredictColumn { kPrediction, kLabel, kIndex };

// "prediction", "label,prediction", "index,label,prediction", ... Each name at
// most once. InvalidArgument naming the bad name.
StatusOr<std::vector<PredictColumn>> ParsePredictColumns(std::string_view spec);

// InvalidArgument when `columns` asks for the label of unlabelled input
// (io/label_mode.h: the labels were read as NaN).
Status CheckPredictColumns(const std::vector<PredictColumn>& columns, const Dataset& data);
// False when any example was read without a label (NaN).
bool HasLabels(const Dataset& data);

// One line per dropped region for the log: "<file>: record <i> at offset <o>
// (<bytes> bytes) dropped as corrupt", with `output_lines` followed by
// "; output line <n> is nan" (n 1-based).
std::vector<std::string> DescribeDropped(const std::vector<LoadStats::Dropped>& dropped, bool output_lines);

// FailedPrecondition "<file>: record <i> at offset <o>: ..." for a dropped
// region of unknown record count (see the file comment).
Status CheckDroppedAlignable(const std::vector<LoadStats::Dropped>& dropped);

// The output text: one line per input record (data.size() + dropped records).
// REQUIRES: probs.size() == data.size(); `dropped` as LoadStats::dropped.
std::string FormatPredictions(const std::vector<PredictColumn>& columns, const Dataset& data,
                              const std::vector<float>& probs, const std::vector<LoadStats::Dropped>& dropped);

}  // namespace ctrain::train
