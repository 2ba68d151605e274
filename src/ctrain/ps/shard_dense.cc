// ParameterShard: the dense state of workers that keep the dense parameters
// (`--ps-dense workers`, ps/parameter_server.proto PushRequest.dense_*).
//
// The workers run the dense optimizer themselves and the servers keep the
// shared copy: Downpour SGD's cycle (Dean et al. 2012, "Large Scale
// Distributed Deep Networks": workers push accumulated updates and fetch
// fresh parameters every n steps) with the updates averaged over the workers
// (local SGD / model averaging: a delta counts 1 / num_workers), for the
// dense part only, as TensorFlow Recommenders-Addons and Persia keep dense
// parameters off the sparse servers' hot path. Summing the deltas instead
// (Downpour's own rule) lost 0.04 validation AUC at 8 steps between
// averagings in bench/ps_bench.sh (docs/performance.md section 9).
#include <cstring>
#include <string>

#include "ctrain/ps/float_bytes.h"
#include "ctrain/ps/shard.h"

namespace ctrain::ps {

Status ParameterShard::ValidateDenseState(const proto::PushRequest& req) const {
  const int nd = static_cast<int>(dense_.size());
  // The lambda gets the tables as an argument, read here under the caller's
  // table_mu_ (clang's thread-safety analysis does not follow captures).
  auto sized = [&](const auto& dense, const google::protobuf::RepeatedPtrField<std::string>& f, const char* what) -> Status {
    if (f.empty()) return Status::OK();
    if (f.size() != nd)
      return InvalidArgumentError("Push: " + std::to_string(f.size()) + " dense " + what + " for " +
                                  std::to_string(nd) + " dense parameters of shard " + std::to_string(options_.shard));
    for (int i = 0; i < nd; ++i)
      if (!HasFloats(f.Get(i), static_cast<int64_t>(dense[i].value.size())))
        return InvalidArgumentError("Push: dense " + std::string(what) + " of '" + dense[i].name + "' has " +
                                    std::to_string(f.Get(i).size()) + " bytes, want " +
                                    std::to_string(dense[i].value.size() * 4));
    return Status::OK();
  };
  CTRAIN_RETURN_IF_ERROR(sized(dense_, req.dense_delta(), "deltas"));
  CTRAIN_RETURN_IF_ERROR(sized(dense_, req.dense_value(), "values"));
  if (!req.dense_slot().empty()) {
    const int ns = dense_opt_->num_slots();
    if (req.dense_slot_size() != nd * ns)
      return InvalidArgumentError("Push: " + std::to_string(req.dense_slot_size()) + " dense optimizer slots for " +
                                  std::to_string(nd) + " dense parameters x " + std::to_string(ns) + " slots");
    for (int i = 0; i < nd; ++i)
      for (int k = 0; k < ns; ++k)
        if (!HasFloats(req.dense_slot(i * ns + k), static_cast<int64_t>(dense_[i].value.size())))
          return InvalidArgumentError("Push: optimizer slot " + std::to_string(k) + " of dense parameter '" +
                                      dense_[i].name + "' has the wrong size");
  }
  if (!req.dense_delta().empty() && !req.dense_value().empty())
    return InvalidArgumentError("Push: dense deltas and dense values in one push (one or the other)");
  if (!req.dense_delta().empty() && !req.dense_grad().empty())
    return InvalidArgumentError("Push: dense deltas and dense gradients in one push (the dense optimizer runs on "
                                "the workers or on the servers, not both)");
  if (!req.dense_only() && (!req.dense_value().empty() || !req.dense_slot().empty()))
    return InvalidArgumentError("Push: dense values and slots travel only in a dense_only push");
  if (req.dense_only() && (req.ids_size() != 0 || req.examples() != 0 || !req.dense_grad().empty()))
    return InvalidArgumentError("Push: a dense_only push carries no ids, examples or dense gradients");
  return Status::OK();
}

void ParameterShard::ApplyDenseStateLocked(const proto::PushRequest& req, float scale) {
  const int ns = dense_opt_->num_slots();
  for (size_t i = 0; i < dense_.size(); ++i) {
    Dense& d = dense_[i];
    const size_t n = d.value.size();
    if (!req.dense_delta().empty()) {
      const float* delta = Floats(req.dense_delta(static_cast<int>(i)));
      float* v = d.value.data();
      if (scale == 1.0f) {
        for (size_t e = 0; e < n; ++e) v[e] += delta[e];
      } else {
        for (size_t e = 0; e < n; ++e) v[e] += scale * delta[e];
      }
    }
    if (!req.dense_value().empty()) std::memcpy(d.value.data(), req.dense_value(static_cast<int>(i)).data(), n * 4);
    if (!req.dense_slot().empty())
      for (int k = 0; k < ns; ++k)
        std::memcpy(d.slots[k].data(), req.dense_slot(static_cast<int>(i) * ns + k).data(), n * 4);
  }
  if (!req.dense_delta().empty() || !req.dense_value().empty() || !req.dense_slot().empty()) dense_syncs_ += 1;
}

}  // namespace ctrain::ps
