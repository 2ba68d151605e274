#include "ctrain/dataservice/client_settings.h"

#include <cstdlib>

#include "ctrain/base/signals.h"
#include "ctrain/dataservice/dispatcher_state.h"

namespace ctrain::dataservice {

StatusOr<DataServiceClientOptions> DataServiceSettings::Options(bool ordered, const std::string& feature_map) const {
  DataServiceClientOptions o;
  o.dispatcher = address;
  CTRAIN_RETURN_IF_ERROR(service::CheckHostPort(address, "--data-service"));
  CTRAIN_ASSIGN_OR_RETURN(o.processing_mode, ParseProcessingMode(processing_mode));
  CTRAIN_ASSIGN_OR_RETURN(o.channel, security.Channel());
  o.job_name = job_name;
  o.num_splits = num_splits;
  o.consumer_index = consumer_index;
  // Under mpirun every rank is one trainer of the job: by default its rank is its index.
  if (!consumer_index_given)
    if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK"); rank != nullptr && *rank != '\0')
      o.consumer_index = std::atoi(rank);
  if (compression != "auto" && compression != "none" && compression != "zstd")
    return InvalidArgumentError("--data-service-compression must be none, zstd or auto, got \"" + compression + "\"");
  o.compression = compression;
  o.max_buffer_bytes = buffer_bytes;
  o.max_open_splits = max_open_splits;
  if (wait_seconds < 0 || wait_seconds > int64_t{1} << 31)
    return InvalidArgumentError("--data-service-wait-seconds must be in [0, 2^31] (0 = no limit), got " +
                                std::to_string(wait_seconds));
  o.wait = std::chrono::seconds(wait_seconds);
  o.ordered = ordered;
  o.feature_map = feature_map;
  o.stop = PendingInterruptFlag();
  return o;
}

}  // namespace ctrain::dataservice
