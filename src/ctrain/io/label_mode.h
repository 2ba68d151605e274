// Whether a text record starts with a label column (LibSVM's first token,
// Criteo's first cell). Unlabelled data is what `ctrain predict` scores:
// Kaggle Criteo's test.txt (39 columns) or LibSVM test sets without the label.
// A record read without a label has the label NaN.
//
//   kRequired  every record has a label (training, eval): the default
//   kAuto      the first data record decides for the whole file, where that
//              is unambiguous: a LibSVM line whose first token is an
//              "id:value" pair (a label never holds ':'), a Criteo row of 39
//              cells instead of 40; every later record must agree (an error
//              names the line and the first record's line)
//   kAbsent    no record has a label (`--no-label`)
#pragma once

namespace ctrain::io {

enum class LabelMode { kRequired, kAuto, kAbsent };

}  // namespace ctrain::io
