#include "actors/admission.hpp"

#include <string>

#include "fencelock/errc.hpp"

namespace fencelock {

caf::error shed(const service_core& core, call_class cls) {
  const auto& cfg = core.cfg;
  auto limit = cls == call_class::acquire ? cfg.shed_acquires_at
               : cls == call_class::read  ? cfg.shed_reads_at
                                          : cfg.max_in_flight;
  auto now = core.busy();
  if (now >= static_cast<int64_t>(limit))
    return caf::make_error(errc::overloaded,
                           "overloaded: " + std::to_string(now)
                             + " requests in progress; new acquires are shed first, renewals "
                               "and releases last");
  if (cls == call_class::read && core.reads_in_flight.load() >= cfg.max_reads_in_flight)
    return caf::make_error(errc::overloaded,
                           "overloaded: " + std::to_string(core.reads_in_flight.load())
                             + " reads in progress (max-reads-in-flight)");
  if (cls != call_class::acquire)
    return caf::none;
  auto lag_ms = core.io_lag_us.load() / 1000;
  if (cfg.shed_io_lag_ms > 0 && lag_ms >= cfg.shed_io_lag_ms)
    return caf::make_error(errc::overloaded,
                           "overloaded: the network loop lags " + std::to_string(lag_ms) + " ms");
  auto store_ms = core.stats->store_write_average_ms();
  if (cfg.shed_store_latency_ms > 0 && store_ms >= cfg.shed_store_latency_ms)
    return caf::make_error(errc::overloaded,
                           "overloaded: lease store writes take "
                             + std::to_string(static_cast<int64_t>(store_ms))
                             + " ms on average; new acquires are shed until they are faster");
  return caf::none;
}

} // namespace fencelock
