// baseline_fsync: what one durable write costs on the disk of the data dir, the floor under
// every durable lock operation. Two probes, one after the other, each for a fixed time:
//   fdatasync   pwrite of 512 bytes into a file written beforehand, then fdatasync, back to back;
//   sqlite      one autocommit upsert of one small row (a 100-byte value) into a SQLite database
//               in WAL mode with synchronous=FULL, as the embedded store opens its own.
// With --idle-writes N, instead: N writes of each kind, every one after a pause of --idle-ms
// (200) with the disk left alone, alternating. That is what the expiry of a lease nobody
// touched costs (the takeover scenario): on a virtual disk a write after a quiet spell can take
// several times what one right after another does.
//
//   baseline_fsync --dir DIR [--warmup 0.5] [--duration 2] [--rounds 1] [--label TEXT]
//                  [--idle-writes N --idle-ms 200]
//
// The files live in a fresh directory under DIR (default /tmp, where the benchmarks' servers
// keep their data), removed at the end. Prints one JSON line per probe and round:
// {"scenario":"fsync_baseline","target":"fdatasync"|"sqlite_commit","per_s","latency",...};
// after idle, the targets are "fdatasync_after_idle" and "sqlite_commit_after_idle", with
// "idle_ms".

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include <boost/json.hpp>

#include "bench/loader/histogram.hpp"
#include "bench/trial_args.hpp"

namespace {

using steady = std::chrono::steady_clock;
using fencelock::bench::histogram;
using fencelock::bench::parse_trial_args;
using fencelock::bench::trial_args;

/// Runs `op` back to back for `warmup` s unrecorded, then `duration` s recorded.
void probe(const std::function<void()>& op, double warmup, double duration, histogram& h,
           double& seconds) {
  auto until = steady::now() + std::chrono::duration_cast<steady::duration>(
                                 std::chrono::duration<double>(warmup));
  while (steady::now() < until)
    op();
  auto t0 = steady::now();
  auto end = t0 + std::chrono::duration_cast<steady::duration>(
                    std::chrono::duration<double>(duration));
  for (auto t = t0; t < end;) {
    op();
    auto t1 = steady::now();
    h.record((t1 - t).count());
    t = t1;
  }
  seconds = std::chrono::duration<double>(steady::now() - t0).count();
}

/// Runs `a` and `b` `writes` times each, alternating, every run after `idle` without I/O.
void probe_after_idle(const std::function<void()>& a, const std::function<void()>& b, int writes,
                      std::chrono::milliseconds idle, histogram& ha, histogram& hb) {
  for (int i = 0; i < writes; ++i) {
    for (auto [op, h] : {std::pair{&a, &ha}, std::pair{&b, &hb}}) {
      std::this_thread::sleep_for(idle);
      auto t0 = steady::now();
      (*op)();
      h->record((steady::now() - t0).count());
    }
  }
}

void check(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
    throw std::runtime_error(std::string{what} + ": " + sqlite3_errmsg(db));
}

/// Prints one probe's line; `idle_ms` > 0 marks writes made after that pause.
void print(const char* target, const histogram& h, double seconds, int round,
           const std::string& dir, const std::string& label, int64_t idle_ms = 0) {
  boost::json::object line{{"scenario", "fsync_baseline"},
                           {"target", target},
                           {"round", round},
                           {"seconds", seconds},
                           {"ops", h.count()},
                           {"mean_us", h.mean() / 1e3},
                           {"latency", h.summary()},
                           {"dir", dir}};
  if (!label.empty())
    line["label"] = label;
  if (idle_ms > 0) // the pauses make up most of `seconds`: no rate
    line["idle_ms"] = idle_ms;
  else
    line["per_s"] = static_cast<double>(h.count()) / seconds;
  std::printf("%s\n", boost::json::serialize(line).c_str());
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  std::string parent = "/tmp";
  trial_args args;
  int idle_writes = 0;
  int64_t idle_ms = 200;
  auto own = [&](std::string_view name, const char* value) {
    if (name == "--dir")
      parent = value;
    else if (name == "--idle-writes")
      idle_writes = std::stoi(value);
    else if (name == "--idle-ms")
      idle_ms = std::stoll(value);
    else
      return false;
    return true;
  };
  if (!parse_trial_args("baseline_fsync", argc, argv, args, own))
    return 2;
  if (idle_writes < 0 || idle_ms <= 0) {
    std::fprintf(stderr, "baseline_fsync: --idle-writes must be >= 0 and --idle-ms > 0\n");
    return 2;
  }
  auto tmpl = parent + "/fencelock-fsync-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::perror("baseline_fsync: mkdtemp");
    return 1;
  }
  std::filesystem::path dir{tmpl};
  int status = 0;
  try {
    // fdatasync of 512 bytes into a file written in full beforehand: no size, block allocation
    // or extent state to commit, only the data. (Blocks merely reserved with posix_fallocate are
    // "unwritten" on ext4, and the first write to each must commit that change too: on the
    // benchmarks' disk ~25 % dearer, as dear as appending.) The cheapest durable write there is,
    // and what SQLite's WAL does once its file is recycled after the first checkpoint.
    auto file = (dir / "probe.bin").string();
    int fd = ::open(file.c_str(), O_RDWR | O_CREAT, 0600);
    std::string zeros(1 << 20, '\0');
    if (fd < 0
        || ::pwrite(fd, zeros.data(), zeros.size(), 0) != static_cast<ssize_t>(zeros.size())
        || ::fsync(fd) != 0)
      throw std::runtime_error("cannot prepare " + file);
    char block[512];
    for (std::size_t i = 0; i < sizeof block; ++i)
      block[i] = static_cast<char>('a' + i % 26);
    off_t offset = 0;
    auto write_sync = [&] {
      if (::pwrite(fd, block, sizeof block, offset) != static_cast<ssize_t>(sizeof block)
          || ::fdatasync(fd) != 0)
        throw std::runtime_error("pwrite/fdatasync failed");
      offset = (offset + 512) % (1 << 20);
    };

    // One autocommit upsert of one small row, WAL with synchronous=FULL.
    sqlite3* db = nullptr;
    auto db_path = (dir / "probe.db").string();
    check(sqlite3_open(db_path.c_str(), &db), db, "open");
    check(sqlite3_exec(db,
                       "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                       "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB NOT NULL);",
                       nullptr, nullptr, nullptr),
          db, "setup");
    sqlite3_stmt* upsert = nullptr;
    check(sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO t(k, v) VALUES (?1, ?2)", -1, &upsert,
                             nullptr),
          db, "prepare");
    int64_t row = 0;
    auto commit = [&] {
      sqlite3_bind_int64(upsert, 1, row++ % 1000);
      sqlite3_bind_blob(upsert, 2, block, 100, SQLITE_STATIC);
      check(sqlite3_step(upsert), db, "upsert");
      sqlite3_reset(upsert);
    };

    for (int r = 0; r < args.rounds; ++r) {
      histogram fs, sq;
      if (idle_writes > 0) {
        auto t0 = steady::now();
        probe_after_idle(write_sync, commit, idle_writes, std::chrono::milliseconds{idle_ms}, fs,
                         sq);
        auto seconds = std::chrono::duration<double>(steady::now() - t0).count();
        print("fdatasync_after_idle", fs, seconds, r, parent, args.label, idle_ms);
        print("sqlite_commit_after_idle", sq, seconds, r, parent, args.label, idle_ms);
        continue;
      }
      double fs_s = 0, sq_s = 0;
      probe(write_sync, args.warmup, args.duration, fs, fs_s);
      print("fdatasync", fs, fs_s, r, parent, args.label);
      probe(commit, args.warmup, args.duration, sq, sq_s);
      print("sqlite_commit", sq, sq_s, r, parent, args.label);
    }
    sqlite3_finalize(upsert);
    sqlite3_close(db);
    ::close(fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "baseline_fsync: %s\n", e.what());
    status = 1;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return status;
}
