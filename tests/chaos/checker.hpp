#pragma once

// The checker of the fault suite: merges the history files of one run (history.hpp) and checks
// the five properties of issue 12, printing every violation with the events around it.
//
//  1. tokens: no token is granted twice, and a grant asked for after another grant was answered
//     carries a higher token (service-wide, so per lock too, and across restarts);
//  2. one holder: no two clients hold valid leases on one lock at once, by their own deadlines
//     (a lease is valid from its grant's answer to the client's local deadline, ended early when
//     the client sends its release or hears that the lease is gone);
//  3. fenced writes: an accepted write never follows an accepted write with a higher token, a
//     write sent within its lease never carries a token older than a grant answered before it,
//     no client decided to write after its local deadline, and the stale write of a frozen
//     client was rejected once a newer holder had written;
//  4. fail closed: nothing was granted, renewed or released by a request that was sent and
//     answered entirely while the store was unreachable (Redis frozen or dead, disk full);
//  5. durability: no acknowledged lease ended before its holder's deadline (a renewal or release
//     answered lease_lost before it, or the client library told of a loss other than its own
//     deadline before it),
//     and status probes after a restart show every acknowledged lease still held and every
//     acknowledged release still released, with lastToken not gone back.
//     Leases that a Redis restarted empty forgot are exempt from 2, 3 and 5 by design
//     (docs/redis.md): tokens must still rise across the loss (1).
//
// Times are CLOCK_MONOTONIC ns; orders are only taken where they are certain (one request
// answered before the other was sent), so a violation is never an artefact of timing.

#include <cstddef>
#include <filesystem>
#include <string>

namespace fencelock::chaos {

/// What a check found.
struct check_result {
  /// The number of violations (0: the history passed).
  size_t violations = 0;
  /// The report: counts, then each violation with its context.
  std::string report;
};

/// Reads every *.jsonl file in `dir` and checks the run. Throws std::runtime_error when the
/// directory cannot be read or holds no driver.jsonl.
check_result check_history(const std::filesystem::path& dir);

} // namespace fencelock::chaos
