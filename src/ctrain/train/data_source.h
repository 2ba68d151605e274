// How a model's training data was encoded, and whether eval/predict input is
// encoded the same way (docs/checkpoint.md#data, docs/training.md#eval-and-predict).
//
// Encodings: LibSVM and TFRecord carry ids as written (LibSVM shifted by its
// id base); Criteo TSV/CSV rows become ids by hashing (buckets, seed) or by a
// vocabulary (feature map). A model only means something on ids made the
// same way, so eval/predict refuse input whose encoding differs from the
// checkpoint's (DataSourceOptions, recorded by `ctrain train`).
//
// Thread safety: plain functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/example_reader.h"
#include "ctrain/io/criteo.h"
#include "ctrain/train/dataset.h"
#include "ctrain/train/train_config.h"

namespace ctrain::train {

// One line for messages, e.g. "libsvm with id base 1", "tfrecord (ids as
// stored)", "criteo-tsv (hashed ids, 921 buckets, seed 0)", "criteo-tsv
// (vocabulary ids from feature map /abs/fm.txt)", "an unknown format".
std::string DescribeDataSource(const DataSourceOptions& d);

// The description of data read through `spec` (LoadSpecDataset; `stats`
// gives the first input's compression): format tfrecord|libsvm|libffm, the
// spec's sizes and its canonical JSON.
DataSourceOptions MakeSpecDataSource(const data::FeatureSpec& spec, const LoadStats& stats);

// The feature spec eval/predict read their input through: the checkpoint's
// (model.feature_spec) and/or --feature-spec (`flag_path`, "" = not given).
// nullopt when neither has one (the seed layout). FailedPrecondition naming
// `model_dir` when the flag's spec differs from the checkpoint's, or when the
// model was trained without a spec (its ids were not made by one); the spec
// file's errors.
StatusOr<std::optional<data::FeatureSpec>> ResolveInferenceSpec(const DataSourceOptions& model,
                                                                const std::string& model_dir,
                                                                const std::string& flag_path);

// 16 hex digits of io::Hash64 over the vocabulary's feature map text (lines in
// id order): equal for equal vocabularies wherever the file lives.
std::string VocabularyFingerprint(const io::CriteoVocabulary& vocabulary);
// The same over the map's first `entries` lines in id order: equal to the
// VocabularyFingerprint of a map of `entries` entries that `vocabulary`
// extends append-only (io/criteo_vocab_extend.h). All lines when `entries`
// exceeds them.
std::string VocabularyFingerprint(const io::CriteoVocabulary& vocabulary, int64_t entries);

// A warm start on ids made through a feature map (docs/training.md#daily-retraining):
// `model` (the checkpoint's, of the model in `model_dir`) recorded the map its
// ids came from; this run's map (`run`, its feature_map and vocabulary) must be
// that map or an append-only extension of it (its first model.vocab_entries
// entries in id order hash to model.vocab_fingerprint), else every row of the
// model would belong to another category. FailedPrecondition naming both maps
// and the convert command that extends the old one; FailedPrecondition when
// this run has no map. OK when the model recorded no map or no entry count
// (an older checkpoint: noted in *notes). `run_vocab` = this run's map, loaded.
Status CheckFeatureMapExtends(const DataSourceOptions& model, const std::string& model_dir,
                              const DataSourceOptions& run, const io::CriteoVocabulary* run_vocab,
                              std::vector<std::string>* notes);

// The format each input would be read as, in ExpandFileList order: the
// reader's format when given, else sniffed from the first bytes of a regular
// file (data::SniffFile, reads nothing else); "" for a stream (stdin, FIFO,
// pipe: channel) with format auto, which cannot be peeked without consuming it.
// Errors: ExpandFileList's and SniffFile's (they name the file).
struct InputFormat {
  std::string path;
  std::string format;       // never "auto"; "" = not known before reading
  std::string compression;  // "" = not known
};
StatusOr<std::vector<InputFormat>> DetectInputFormats(const std::vector<std::string>& paths,
                                                      const data::ExampleReaderOptions& reader);

// "none"/"gzip"/"zlib" ("" for kAuto).
std::string CompressionText(io::Compression c);

// The description of data read with `reader` (id base, field size, feature
// size, hashing or vocabulary from reader.vocabulary with its fingerprint;
// `feature_map` = the map's path for messages) in `format` / `compression`.
DataSourceOptions MakeDataSource(const std::string& format, const std::string& compression,
                                 const data::ExampleReaderOptions& reader, const std::string& feature_map);

// The training data's description for checkpoints: the first input whose
// format is known gives format and compression (an input mixing encoding
// families, e.g. criteo-tsv with libsvm, is InvalidArgument naming both files).
StatusOr<DataSourceOptions> DescribeTrainingData(const std::vector<InputFormat>& inputs,
                                                 const data::ExampleReaderOptions& reader,
                                                 const std::string& feature_map);

// Checks that `input` (one eval/predict input named `input_name`, as read
// with the flags and the checkpoint's defaults) is encoded like `model` (the
// checkpoint's, of the model in `model_dir`). FailedPrecondition naming both
// sides, e.g. "--input x.tsv is criteo-tsv (hashed ids, 921 buckets, seed 0);
// the model in runs/a was trained on libsvm with id base 1: ...". Appends to
// *notes what could not be checked (an old checkpoint without the format) or
// is accepted with a caveat (libsvm vs tfrecord: ids taken as stored).
Status CheckInputMatchesModel(const DataSourceOptions& model, const std::string& model_dir,
                              const DataSourceOptions& input, const std::string& input_name,
                              std::vector<std::string>* notes);

// The same check for `ctrain train --valid`: each of `valid` (read with the
// same `reader` as the training data) must be encoded like `training` (this
// run's DescribeTrainingData of `train_paths`). FailedPrecondition naming both
// sides, e.g. "--valid v.tsv is criteo-tsv (hashed ids, 921 buckets, seed 0);
// this run trains on --train tr.libsvm, which is libsvm with id base 1: ...".
// OK without a check when the training format is not known yet (a stream
// read with --format auto).
Status CheckValidMatchesTraining(const DataSourceOptions& training, const std::vector<std::string>& train_paths,
                                 const std::vector<InputFormat>& valid, const data::ExampleReaderOptions& reader,
                                 const std::string& feature_map);

// CheckInputMatchesModel for each of `inputs` (named "--input <path>"), read
// with `reader` (id base, sizes, vocabulary) and `feature_map` (its path).
Status CheckInputsMatchModel(const DataSourceOptions& model, const std::string& model_dir,
                             const std::vector<InputFormat>& inputs, const data::ExampleReaderOptions& reader,
                             const std::string& feature_map, std::vector<std::string>* notes);

// Streams read with --format auto are described once read: `read` (the
// formats the pipeline opened, PipelineStats::inputs) fills d->format and
// d->compression when they are still empty. Inputs of different encoding
// families (e.g. criteo-tsv from stdin, libsvm from a file) are
// InvalidArgument naming both, as in DescribeTrainingData; `known_from` names
// where an already-known d->format came from (e.g. "--train a.libsvm").
Status RecordFormatsRead(const std::vector<InputFormat>& read, const std::string& known_from, DataSourceOptions* d);

// The formats LoadDataset actually read, per file (LoadStats::per_file).
std::vector<InputFormat> InputFormatsRead(const LoadStats& stats);

}  // namespace ctrain::train
