#include "convert.h"

#include <memory>

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace ctrain::python {

PyObject* ExceptionFor(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kOutOfRange:
    case StatusCode::kDataLoss:
      return PyExc_ValueError;
    case StatusCode::kNotFound:
      return PyExc_FileNotFoundError;
    case StatusCode::kPermissionDenied:
    case StatusCode::kUnauthenticated:
      return PyExc_PermissionError;
    case StatusCode::kAlreadyExists:
      return PyExc_FileExistsError;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return PyExc_OSError;
    case StatusCode::kUnimplemented:
      return PyExc_NotImplementedError;
    default:
      return PyExc_RuntimeError;
  }
}

void Raise(const Status& s) {
  PyErr_SetString(ExceptionFor(s.code()), s.ToString().c_str());
  throw nb::python_error();
}

nb::tuple BatchToArrays(data::Batch&& batch) {
  if (batch.variable_length())
    Raise(UnimplementedError("variable-length (CSR) batches have no fixed [B, F] arrays"));
  auto* b = new data::Batch(std::move(batch));
  nb::capsule owner(b, [](void* p) noexcept { delete static_cast<data::Batch*>(p); });
  const size_t rows = static_cast<size_t>(b->size());
  const size_t fields = static_cast<size_t>(b->field_size);
  using Labels = nb::ndarray<nb::numpy, float, nb::ndim<1>, nb::c_contig>;
  using Ids = nb::ndarray<nb::numpy, int64_t, nb::ndim<2>, nb::c_contig>;
  using Values = nb::ndarray<nb::numpy, float, nb::ndim<2>, nb::c_contig>;
  Labels labels(b->labels.data(), {rows}, owner);
  Ids ids(b->ids.data(), {rows, fields}, owner);
  Values values(b->values.data(), {rows, fields}, owner);
  return nb::make_tuple(labels.cast(), ids.cast(), values.cast());
}

std::string OptionText(nb::handle value) {
  if (nb::isinstance<nb::bool_>(value)) return nb::cast<bool>(value) ? "true" : "false";
  if (nb::isinstance<nb::str>(value)) return nb::cast<std::string>(value);
  return nb::cast<std::string>(nb::str(value));
}

void SetDataOptions(const nb::dict& d, job::DataOptions* f) {
  for (auto [k, v] : d) {
    const std::string key = nb::cast<std::string>(k);
    if (v.is_none()) continue;
    if (key == "format") f->format = OptionText(v);
    else if (key == "compression") f->compression = OptionText(v);
    else if (key == "field_size") f->field_size = nb::cast<int32_t>(v);
    else if (key == "id_base") f->id_base = nb::cast<int32_t>(v);
    else if (key == "feature_size") f->feature_size = nb::cast<int64_t>(v);
    else if (key == "feature_map") f->feature_map = nb::cast<std::string>(nb::str(v));
    else if (key == "skip_corrupt_records") f->skip_corrupt_records = nb::cast<bool>(v);
    else if (key == "max_skipped_records") f->max_skipped_records = nb::cast<uint64_t>(v);
    else if (key == "max_line_bytes") f->max_line_bytes = nb::cast<int64_t>(v);
    else if (key == "pipe_timeout_ms") f->pipe_timeout_ms = nb::cast<int64_t>(v);
    else if (key == "criteo_pad_missing_trailing") f->criteo_pad_missing_trailing = nb::cast<bool>(v);
    else {
      PyErr_SetString(PyExc_TypeError, ("unknown reader option '" + key + "'").c_str());
      throw nb::python_error();
    }
  }
}

void SetPipelineOptions(const nb::dict& d, data::PipelineOptions* o) {
  for (auto [k, v] : d) {
    if (v.is_none()) continue;
    ThrowIfError(data::SetPipelineOption(o, nb::cast<std::string>(k), OptionText(v)));
  }
}

}  // namespace ctrain::python
