// The training job's name that `ctrain launch` gives every role it starts
// (--training-job-name: the dispatcher, the data workers, the trainer), so
// that a role of one job never joins another job's service on the same hosts
// (shared/cases/B54: two jobs on one host; docs/launch.md#identity).
//
// SageMaker sets TRAINING_JOB_NAME in the training container: that name when
// present. Elsewhere (local mode, tests, a BYO runner without it)
// "launch-<16 hex digits>": io::Hash64 of what every host of one job shares
// and two jobs do not: the hyperparameters (file order), the hosts and the
// instance groups, and the directory the hosts' trees live in (the parent of
// --sm-root, absolute: a simulated cluster lays out <job>/algo-N per host, and
// two jobs on one machine differ there, as in B54). The channels are left out:
// a heterogeneous job gives a channel to one instance group only (B51), so
// hosts of one job see different channels. The current host is left out, so
// every host of a job computes the same name.
#pragma once

#include <string>

#include "ctrain/launch/sagemaker_config.h"

namespace ctrain::launch {

std::string TrainingJobName(const Contract& contract, const EnvLookup& getenv);

}  // namespace ctrain::launch
