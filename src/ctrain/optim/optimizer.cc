#include "ctrain/optim/optimizer.h"

#include "ctrain/optim/adagrad.h"
#include "ctrain/optim/adam.h"
#include "ctrain/optim/ftrl.h"
#include "ctrain/optim/sgd.h"

namespace ctrain::optim {

Optimizer::~Optimizer() = default;

StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerConfig& config) {
  if (config.name == "sgd" || config.name == "momentum") return SgdOptimizer::Create(config);
  if (config.name == "adagrad") return AdagradOptimizer::Create(config);
  if (config.name == "adam") return AdamOptimizer::Create(config);
  if (config.name == "ftrl") return FtrlOptimizer::Create(config);
  return InvalidArgumentError("unknown optimizer '" + config.name +
                              "': expected one of sgd, momentum, adagrad, adam, ftrl");
}

}  // namespace ctrain::optim
