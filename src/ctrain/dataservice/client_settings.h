// The user-facing settings of a data-service client (`train --data-service`,
// `data-service read`, the Python DataService, the launcher), validated into
// DataServiceClientOptions (dataservice/client.h). Names follow tf.data
// service: processing_mode, job_name, consumer_index, num_splits.
#pragma once

#include <cstdint>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/dataservice/client.h"
#include "ctrain/service/security_options.h"

namespace ctrain::dataservice {

struct DataServiceSettings {
  std::string address;  // the dispatcher, HOST:PORT ("" = no data service)
  std::string processing_mode = "distributed_epoch";  // or parallel_epochs
  std::string job_name;                                // "" = derived from the dataset
  int32_t num_splits = 8;                              // distributed_epoch: splits per epoch
  int32_t consumer_index = 0;
  // false: under mpirun the rank is the consumer index (OMPI_COMM_WORLD_RANK).
  bool consumer_index_given = false;
  std::string compression = "auto";  // none | zstd | auto
  int64_t buffer_bytes = int64_t{256} << 20;
  int32_t max_open_splits = 4;
  // The longest wait for the dispatcher, a live worker or the next batch
  // before the read fails naming --data-service-wait-seconds; 0 = no limit.
  int64_t wait_seconds = 600;
  service::SecurityOptions security;

  // Validates (errors name the CLI flag: --data-service, --processing-mode,
  // --data-service-compression, --data-service-wait-seconds) and fills the client options. `feature_map`:
  // the absolute path of the trainer's feature map ("" = none).
  StatusOr<DataServiceClientOptions> Options(bool ordered, const std::string& feature_map) const;
};

}  // namespace ctrain::dataservice
