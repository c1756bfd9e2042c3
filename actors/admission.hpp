#pragma once

// Admission at the door (docs/overload.md): which calls the service turns away, and when, so
// that what it already holds (renewals above all) keeps being served.

#include <caf/error.hpp>

#include "actors/service_core.hpp"

namespace fencelock {

/// Which shedding threshold a call answers to.
enum class call_class {
  acquire, // shed first: new work
  read,    // status, check, list, subscribe
  lease,   // renew, release: refused only at max-in-flight
};

/// Returns the overloaded error that sheds a call of class `cls` now, or none.
caf::error shed(const service_core& core, call_class cls);

} // namespace fencelock
