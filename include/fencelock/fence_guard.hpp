#pragma once

// The resource side of fencing: a fence_guard keeps, per lock name, the highest fencing token a
// resource has accepted, and admits an operation only with a token at least that high. It depends
// on the C++ standard library alone, so that any resource (a file store, a database proxy, a
// key-value service) can link it without CAF or Boost.
//
// Use:
//
//   auto store = fencelock::file_fence_store::open("/var/lib/kv/fence.log", ec);
//   fencelock::fence_guard guard{{.max_names = 100'000}, std::move(store)};
//   if (auto ec = guard.restore()) { /* refuse to serve: the marks could not be read */ }
//   auto d = guard.guarded(lock, token, [&] { return write_the_value(); });
//   if (!d.admitted) { /* 409 stale_token, d.highest */ }
//
// Order of a guarded write (why it is safe across crashes):
//   1. take the name's mutex (all operations on one name are serialized);
//   2. reject if token < mark (stale);
//   3. persist `token` as the name's mark through the fence_store (durably, fsync);
//   4. run the caller's write;
//   5. raise the in-memory mark to `token` if the write succeeded.
// Because 3 happens before 4, after a crash the persisted mark is never lower than the token of any
// write that took effect. If the write fails after 3, the persisted mark is higher than the
// in-memory one; a restart then rejects tokens below it. That is the safe direction: the lock
// service granted `token` after every lower token, so their holders were already superseded.
//
// Bounded memory: the guard remembers at most `max_names` names. When it is full and a new name
// arrives, it forgets the least recently used name that no call is using, and raises a global
// `floor` to the highest mark it forgot. A name the guard does not know has the floor as its mark,
// so a token below the floor is rejected (fail closed). This can reject an old-but-valid holder of
// a forgotten name (its token may be below a mark of some other, unrelated name). That is the safe
// direction: the alternative, admitting an unknown name from zero, would admit a stale holder of a
// forgotten name, which is exactly what fencing exists to prevent. A rejected holder can acquire
// the lock again and get a token above the floor (tokens grow service-wide).

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace fencelock {

/// Why a fence_guard call answered as it did.
enum class fence_reason : uint8_t {
  /// The token was high enough and the write (if any) succeeded.
  ok = 1,
  /// The token is below the name's mark (or below the floor for an unknown name).
  stale,
  /// The token was high enough but the caller's write reported failure; the mark is unchanged.
  write_failed,
  /// The store could not persist the mark (or the guard was never restored); nothing ran.
  store_failed,
};

/// Returns the name of `x` ("ok", "stale", "write_failed", "store_failed").
const char* to_string(fence_reason x) noexcept;

/// The answer of a fence_guard call.
struct fence_decision {
  /// True when the operation was admitted (and its write, if any, succeeded).
  bool admitted = false;
  /// The name's mark after the call: the token itself when admitted.
  uint64_t highest = 0;
  /// Why.
  fence_reason reason = fence_reason::stale;
  /// The store's error when `reason` is store_failed.
  std::error_code error;
};

/// What a fence_store holds: the marks it knows, oldest-written first, and the floor.
struct fence_snapshot {
  /// (name, mark) pairs, each name once, ordered from the least to the most recently written.
  std::vector<std::pair<std::string, uint64_t>> marks;
  /// The highest mark the guard forgot; unknown names start here.
  uint64_t floor = 0;
};

/// Persists a fence_guard's marks so that a restarted resource does not forget them.
///
/// Threads: `load` is called once, by the thread that calls fence_guard::restore. `save` may be
/// called concurrently from every thread that calls the guard (one name at a time per thread);
/// `save_floor` from any of them too. Implementations must be thread-safe.
class fence_store {
public:
  /// Destroys the store; the guard that owns it calls nothing afterwards.
  virtual ~fence_store() = default;

  /// Reads everything persisted so far into `out`; returns an error when it cannot.
  virtual std::error_code load(fence_snapshot& out) = 0;

  /// Durably records `token` as the mark of `name` before returning; returns an error otherwise.
  virtual std::error_code save(std::string_view name, uint64_t token) = 0;

  /// Durably records the guard's floor; the store may then drop marks at or below it.
  virtual std::error_code save_floor(uint64_t floor) = 0;
};

/// A fence_store in an append-only file of "name token" lines (names percent-encoded), each
/// append followed by fsync. A line "! F" records the floor F. Opening compacts the file: the last
/// mark of every name above the floor is written to "<path>.tmp", fsynced, and renamed over the
/// log (then the directory is fsynced). A last line without its newline (a torn append after a
/// crash) is ignored; any other malformed line makes open fail (fail closed).
class file_fence_store final : public fence_store {
public:
  /// Opens (creating if absent) and compacts the log at `path`; returns null and sets `ec` on
  /// failure. Call from one thread; the result is then safe to share.
  static std::unique_ptr<file_fence_store> open(const std::string& path, std::error_code& ec);

  /// Closes the log file.
  ~file_fence_store() override;

  file_fence_store(const file_fence_store&) = delete;
  file_fence_store& operator=(const file_fence_store&) = delete;

  /// Returns what open read (after compaction). Thread-safe.
  std::error_code load(fence_snapshot& out) override;

  /// Appends "name token" and fsyncs. Thread-safe (appends are serialized).
  std::error_code save(std::string_view name, uint64_t token) override;

  /// Appends "! floor" and fsyncs, if `floor` is above the last recorded floor. Thread-safe.
  std::error_code save_floor(uint64_t floor) override;

  /// Returns the log's path.
  const std::string& path() const noexcept {
    return path_;
  }

private:
  file_fence_store(std::string path, int fd, fence_snapshot snap);

  std::error_code append(const std::string& line);

  std::string path_;
  int fd_ = -1;
  fence_snapshot loaded_;
  uint64_t floor_ = 0;
  std::mutex mtx_;
};

/// Options of a fence_guard.
struct fence_options {
  /// The most names the guard remembers (at least 1). Calls in progress pin their names, so the
  /// count may exceed this by the number of concurrent callers until they return.
  size_t max_names = 65'536;
};

/// Keeps the highest token seen per lock name and admits only operations carrying a token at
/// least that high (equal is admitted: the same holder's repeated writes). Thread-safe: every
/// member may be called from any thread; calls on one name are serialized, calls on different
/// names run in parallel (each caller's write runs on the caller's thread).
class fence_guard {
public:
  /// Creates a guard that keeps its marks in memory only.
  explicit fence_guard(fence_options opts = {});

  /// Creates a guard that persists its marks through `store`. It rejects everything
  /// (store_failed) until restore() succeeds.
  fence_guard(fence_options opts, std::unique_ptr<fence_store> store);

  /// Destroys the guard (and its store); no call may still be in progress.
  ~fence_guard();

  fence_guard(const fence_guard&) = delete;
  fence_guard& operator=(const fence_guard&) = delete;

  /// Loads the store's marks and floor (replacing what the guard knows; names beyond max_names
  /// are folded into the floor, least recently written first). Call once, before serving, from
  /// one thread. Returns the store's error; without a store it does nothing.
  std::error_code restore();

  /// Admits `token` for `name` if it is at least the name's mark, persisting it and raising the
  /// mark; for callers whose write needs no atomicity with the check. Runs on the caller's thread.
  fence_decision admit(std::string_view name, uint64_t token);

  /// Checks `token` for `name` and, if admitted, persists the mark and runs `write` while holding
  /// the name's lock, so no other call on `name` interleaves. `write` returns bool (false = it
  /// failed) or void; it runs on the caller's thread. The in-memory mark is raised only if the
  /// write succeeded; if `write` throws, the exception propagates and the mark is unchanged.
  template <class F>
  fence_decision guarded(std::string_view name, uint64_t token, F&& write) {
    pin p{*this, name};
    std::unique_lock<std::mutex> lk{p.mutex()};
    auto d = prepare(p.get(), name, token);
    if (!d.admitted)
      return d;
    bool ok = true;
    if constexpr (std::is_void_v<std::invoke_result_t<F&&>>)
      std::invoke(std::forward<F>(write));
    else
      ok = static_cast<bool>(std::invoke(std::forward<F>(write)));
    if (!ok)
      return {false, d.highest, fence_reason::write_failed, {}};
    return commit(p.get(), token);
  }

  /// Returns the mark `name` would be checked against now (the floor when unknown). Does not
  /// change recency. Runs on the caller's thread.
  uint64_t highest(std::string_view name) const;

  /// Returns the floor: the highest mark forgotten so far.
  uint64_t floor() const;

  /// Returns how many names the guard remembers now.
  size_t size() const;

private:
  struct entry;
  struct state;

  // Looks up or creates `name`'s entry, marks it most recently used and in use; the destructor
  // releases it. Holds the guard's map mutex only while constructing and destroying.
  class pin {
  public:
    pin(fence_guard& g, std::string_view name);
    ~pin();
    pin(const pin&) = delete;
    pin& operator=(const pin&) = delete;
    std::mutex& mutex() const noexcept;
    entry& get() const noexcept {
      return *e_;
    }

  private:
    fence_guard& g_;
    std::shared_ptr<fence_guard::entry> e_;
  };

  // With the entry's mutex held: checks the token and persists it; admitted=true means go ahead.
  fence_decision prepare(entry& e, std::string_view name, uint64_t token);
  // With the entry's mutex held: raises the mark after a successful write.
  fence_decision commit(entry& e, uint64_t token);

  std::unique_ptr<state> st_;
};

} // namespace fencelock
