#include "chaos/checker.hpp"

#include <algorithm>
#include <deque>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/json.hpp>

namespace fencelock::chaos {

namespace {

namespace json = boost::json;

// One line of a history file, with the fields the checks read.
struct event {
  std::string src; // file stem: "client-3", "driver"
  size_t line = 0;
  std::string op;  // acquire renew release write | fault probe recovered run
  std::string lock, owner, res, code, kind;
  int client = -1;
  int inst = -1;
  int64_t t0 = 0, t1 = 0;
  int64_t deadline = 0, prev_deadline = 0, check = 0;
  int64_t dead = 0, relaunch = 0; // redis_kill: reaped, relaunched
  int64_t ttl = 0;                 // ms, of a grant
  int64_t offset = 0;              // clock: CLOCK_REALTIME minus CLOCK_MONOTONIC, ns
  int64_t since = 0;               // clock: the offset took hold within [since, t0]
  uint64_t token = 0, highest = 0, last_token = 0;
  bool held = false, paused = false, empty = false, newer_written = false, targeted = false;
  bool ok = false, has_last_token = false;
};

int64_t get_i64(const json::object& o, std::string_view k) {
  auto* p = o.if_contains(k);
  if (p == nullptr)
    return 0;
  if (p->is_int64())
    return p->as_int64();
  if (p->is_uint64())
    return static_cast<int64_t>(p->as_uint64());
  return 0;
}

uint64_t get_u64(const json::object& o, std::string_view k) {
  auto* p = o.if_contains(k);
  if (p == nullptr)
    return 0;
  if (p->is_uint64())
    return p->as_uint64();
  if (p->is_int64() && p->as_int64() >= 0)
    return static_cast<uint64_t>(p->as_int64());
  return 0;
}

std::string get_str(const json::object& o, std::string_view k) {
  auto* p = o.if_contains(k);
  return p != nullptr && p->is_string() ? std::string{p->as_string()} : std::string{};
}

bool get_bool(const json::object& o, std::string_view k) {
  auto* p = o.if_contains(k);
  return p != nullptr && p->is_bool() && p->as_bool();
}

event parse_event(const json::object& o, std::string src, size_t line) {
  event e;
  e.src = std::move(src);
  e.line = line;
  e.op = get_str(o, "op");
  e.lock = get_str(o, "lock");
  e.owner = get_str(o, "owner");
  e.res = get_str(o, "res");
  e.code = get_str(o, "code");
  e.kind = get_str(o, "kind");
  e.client = o.contains("c") ? static_cast<int>(get_i64(o, "c")) : -1;
  e.inst = o.contains("inst") ? static_cast<int>(get_i64(o, "inst")) : -1;
  e.t0 = get_i64(o, "t0");
  e.t1 = o.contains("t1") ? get_i64(o, "t1") : e.t0;
  e.deadline = get_i64(o, "deadline");
  e.prev_deadline = get_i64(o, "prev_deadline");
  e.check = get_i64(o, "check");
  e.dead = get_i64(o, "dead");
  e.relaunch = get_i64(o, "relaunch");
  e.ttl = get_i64(o, "ttl");
  e.offset = get_i64(o, "offset");
  e.since = o.contains("since") ? get_i64(o, "since") : e.t0;
  e.token = get_u64(o, "token");
  e.highest = get_u64(o, "highest");
  e.has_last_token = o.contains("last_token");
  e.last_token = get_u64(o, "last_token");
  e.held = get_bool(o, "held");
  e.paused = get_bool(o, "paused");
  e.empty = get_bool(o, "empty");
  e.newer_written = get_bool(o, "newer_written");
  e.targeted = get_bool(o, "targeted");
  e.ok = get_bool(o, "ok");
  return e;
}

// One acknowledged grant and what its client did with it.
struct lease {
  const event* grant = nullptr;
  std::vector<const event*> ops; // renewals, writes, release, in order
  int64_t deadline = 0;          // the client's local deadline, last confirmed
  int64_t end = 0;               // the client stopped counting on it (<= deadline)
  const event* release_ack = nullptr;
  bool exempt = false;           // granted before a Redis that came back empty: lost by design
};

class checker {
public:
  explicit checker(const std::filesystem::path& dir) {
    load(dir);
  }

  check_result run() {
    build_leases();
    check_tokens();
    check_overlap();
    check_writes();
    check_outages();
    check_durability();
    check_liveness();
    check_result res;
    res.violations = violations_;
    res.report = summary() + out_.str();
    if (violations_ > max_detailed)
      res.report += "... and " + std::to_string(violations_ - max_detailed)
                    + " more violations (headlines above only past the first "
                    + std::to_string(max_detailed) + ")\n";
    res.report += violations_ == 0 ? "chaos check: PASS\n"
                                   : "chaos check: FAIL, " + std::to_string(violations_)
                                       + " violation(s)\n";
    return res;
  }

private:
  static constexpr size_t max_detailed = 40;

  void load(const std::filesystem::path& dir) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator{dir, ec})
      if (entry.path().extension() == ".jsonl")
        files.push_back(entry.path());
    if (ec)
      throw std::runtime_error("cannot read " + dir.string() + ": " + ec.message());
    std::sort(files.begin(), files.end());
    bool driver = false;
    for (const auto& f : files) {
      auto stem = f.stem().string();
      driver = driver || stem == "driver";
      std::ifstream in{f};
      std::string text;
      for (size_t n = 1; std::getline(in, text); ++n) {
        boost::system::error_code jec;
        auto v = json::parse(text, jec);
        if (jec || !v.is_object()) {
          ++unreadable_; // a line cut short by a killed process
          continue;
        }
        auto e = parse_event(v.as_object(), stem, n);
        if (e.op == "run") {
          run_ = e;
          store_ = get_str(v.as_object(), "store");
          seed_ = get_u64(v.as_object(), "seed");
        }
        events_.push_back(std::move(e));
      }
    }
    if (!driver)
      throw std::runtime_error("no driver.jsonl in " + dir.string());
    // Stable order for context printing: by start time.
    std::stable_sort(events_.begin(), events_.end(),
                     [](const event& a, const event& b) { return a.t0 < b.t0; });
    for (const auto& e : events_) {
      ++counts_[e.op + (e.op == "fault" ? ":" + e.kind : (e.res.empty() ? "" : ":" + e.res))];
      if (e.op == "fault")
        faults_.push_back(&e);
      if (e.op == "clock")
        clock_.push_back(&e); // sorted by t0 with events_
    }
  }

  // Redis judges deadlines on its host's wall clock, the clients on CLOCK_MONOTONIC, and the two
  // need not move together (clock_watch.hpp). Returns when the store's clock ended a lease whose
  // local deadline `deadline` was counted from `set_at`: where the wall clock reads what it read
  // at `set_at` plus the TTL, by the offsets in clock.jsonl; never later than `deadline`, which
  // ends the lease for its client anyway. The embedded store keeps CLOCK_MONOTONIC itself.
  // Each offset is taken to hold from the earliest moment it can have (its `since`) to the
  // next one's: a step is never placed later than it happened.
  int64_t store_end(int64_t set_at, int64_t deadline) const {
    if (store_ != "redis" || clock_.empty())
      return deadline;
    // The sample in force at set_at.
    auto next = std::upper_bound(clock_.begin(), clock_.end(), set_at,
                                 [](int64_t t, const event* c) { return t < c->since; });
    size_t k = next == clock_.begin() ? 0 : static_cast<size_t>(next - clock_.begin()) - 1;
    int64_t wall_deadline = deadline + clock_[k]->offset;
    for (int64_t from = set_at; k < clock_.size() && from < deadline; ++k) {
      int64_t to = k + 1 < clock_.size() ? clock_[k + 1]->since : INT64_MAX;
      int64_t at = wall_deadline - clock_[k]->offset;
      if (at < from)
        return from; // the wall clock stepped past the deadline
      if (at < to)
        return std::min(at, deadline);
      from = to;
    }
    return deadline;
  }

  // The store's end of lease `l` at local deadline `deadline`: a deadline is counted from the
  // request that set it, TTL earlier (the clients renew with the grant's TTL).
  int64_t store_end(const lease& l, int64_t deadline) const {
    int64_t set_at = l.grant->ttl > 0 ? deadline - l.grant->ttl * 1'000'000 : l.grant->t0;
    return store_end(set_at, deadline);
  }

  // Relative time in seconds with ms precision, for the report.
  std::string rel(int64_t t) const {
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(3);
    os << (t >= run_.t0 ? "+" : "") << static_cast<double>(t - run_.t0) / 1e9 << "s";
    return os.str();
  }

  // A duration in ns as milliseconds with µs precision, for the report.
  static std::string ms_text(int64_t ns) {
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(3);
    os << static_cast<double>(ns) / 1e6 << " ms";
    return os.str();
  }

  std::string describe(const event& e) const {
    std::ostringstream os;
    os << rel(e.t0) << ".." << rel(e.t1) << "  " << e.src << ":" << e.line << "  " << e.op;
    if (e.op == "fault")
      os << " " << e.kind;
    if (!e.lock.empty())
      os << " " << e.lock;
    if (!e.owner.empty())
      os << " owner=" << e.owner;
    if (e.token != 0)
      os << " token=" << e.token;
    if (!e.res.empty())
      os << " res=" << e.res;
    if (!e.code.empty())
      os << " code=" << e.code;
    if (e.deadline != 0)
      os << " deadline=" << rel(e.deadline);
    if (e.op == "write")
      os << " check=" << rel(e.check) << (e.paused ? " paused" : "")
         << (e.highest != 0 ? " highest=" + std::to_string(e.highest) : "");
    if (e.op == "probe")
      os << " held=" << (e.held ? "yes" : "no") << " last_token=" << e.last_token;
    if (e.op != "fault" && e.inst >= 0)
      os << " via instance-" << e.inst;
    if (e.op == "fault") {
      if (e.client >= 0)
        os << " client-" << e.client;
      if (e.inst >= 0)
        os << " instance-" << e.inst;
      if (e.kind == "redis_kill")
        os << (e.empty ? " empty" : " aof") << " dead=" << rel(e.dead)
           << " relaunch=" << rel(e.relaunch);
      if (e.targeted)
        os << " targeted" << (e.newer_written ? " newer_written" : "");
    }
    if (e.op == "recovered")
      os << (e.ok ? " ok" : " FAILED");
    return os.str();
  }

  // Records a violation of `property`: the headline, the events it is about, and every event on
  // the same lock (and every fault) from a second before the first to a second after the last.
  void violation(std::string_view property, const std::string& headline,
                 std::vector<const event*> about) {
    ++violations_;
    ++by_property_[std::string{property}];
    out_ << "\nVIOLATION [" << property << "] " << headline << "\n";
    if (violations_ > max_detailed)
      return;
    int64_t from = INT64_MAX, to = INT64_MIN;
    std::set<std::string> locks;
    for (auto* e : about) {
      out_ << "  >> " << describe(*e) << "\n";
      from = std::min(from, e->t0);
      to = std::max({to, e->t1, e->deadline});
      if (!e->lock.empty())
        locks.insert(e->lock);
    }
    from -= 1'000'000'000;
    to += 1'000'000'000;
    out_ << "  context (" << rel(from) << " .. " << rel(to) << "):\n";
    size_t shown = 0;
    for (const auto& e : events_) {
      if (e.t1 < from || e.t0 > to)
        continue;
      if (e.op != "fault" && !locks.contains(e.lock))
        continue;
      bool is_about = std::find(about.begin(), about.end(), &e) != about.end();
      if (++shown > 60) {
        out_ << "     ... (more context cut)\n";
        break;
      }
      out_ << (is_about ? "  >> " : "     ") << describe(e) << "\n";
    }
  }

  // Returns whether `e` tells a later local deadline of its lease: a confirmed renewal, or
  // (client library) a sample of the deadline the library keeps.
  static bool moves_deadline(const event& e) {
    return (e.op == "renew" && e.res == "ok") || e.op == "deadline";
  }

  void build_leases() {
    // Clients are sequential: their events, in file order, follow each attempt to its end.
    std::map<std::string, std::vector<const event*>> per_client;
    for (const auto& e : events_)
      if (e.client >= 0 && e.op != "fault")
        per_client[e.src].push_back(&e);
    for (auto& [src, evs] : per_client) {
      std::sort(evs.begin(), evs.end(),
                [](const event* a, const event* b) { return a->line < b->line; });
      // Owners are unique per attempt; the driver's own leases interleave, so go by owner.
      std::unordered_map<std::string, lease*> open;
      for (const auto* e : evs) {
        if (e->op == "acquire") {
          if (e->res == "granted") {
            leases_.push_back({});
            auto* l = &leases_.back();
            l->grant = e;
            l->deadline = e->deadline;
            l->end = e->deadline;
            open[e->owner] = l;
          }
          continue;
        }
        auto it = open.find(e->owner);
        if (it == open.end())
          continue;
        it->second->ops.push_back(e);
        if (moves_deadline(*e))
          it->second->deadline = std::max(it->second->deadline, e->deadline);
      }
    }
    // End of validity: the last confirmed deadline, cut short when the client sent its release
    // or heard that the lease was gone (lease_lost, a stale write).
    for (auto& l : leases_) {
      l.end = store_end(l, l.deadline);
      if (l.end < l.deadline) {
        ++ended_early_by_clock_;
        most_early_by_clock_ = std::max(most_early_by_clock_, l.deadline - l.end);
      }
      for (const auto* e : l.ops) {
        if (e->op == "release") {
          l.end = std::min(l.end, std::max(e->t0, l.grant->t1));
          if (e->res == "ok")
            l.release_ack = e;
          break;
        }
        if ((e->op == "renew" && e->res == "lost") || (e->op == "write" && e->res == "stale")) {
          l.end = std::min(l.end, std::max(e->t1, l.grant->t1));
          break;
        }
        if (e->op == "lost") { // the client library declared the loss at t0
          l.end = std::min(l.end, std::max(e->t0, l.grant->t1));
          break;
        }
      }
      for (const auto* f : faults_)
        if (f->kind == "redis_kill" && f->empty && l.grant->t0 < f->dead && l.end > f->t0)
          l.exempt = true;
      if (l.exempt)
        ++exempt_;
      by_owner_[l.grant->owner] = &l;
    }
    for (const auto& l : leases_)
      grants_.push_back(&l);
    std::sort(grants_.begin(), grants_.end(),
              [](const lease* a, const lease* b) { return a->grant->t1 < b->grant->t1; });
  }

  // 1. Tokens: unique service-wide; a grant asked for after another was answered is higher.
  void check_tokens() {
    std::unordered_map<uint64_t, const lease*> seen;
    for (const auto* l : grants_) {
      auto [it, fresh] = seen.emplace(l->grant->token, l);
      if (!fresh)
        violation("tokens", "token " + std::to_string(l->grant->token) + " granted twice (to "
                              + it->second->grant->owner + " and " + l->grant->owner + ")",
                  {it->second->grant, l->grant});
    }
    // prefix[i] = the grant with the highest token among grants_[0..i] (sorted by answer time).
    std::vector<const lease*> prefix;
    for (const auto* l : grants_)
      prefix.push_back(prefix.empty() || prefix.back()->grant->token < l->grant->token
                         ? l
                         : prefix.back());
    for (const auto* l : grants_) {
      // Grants answered before this one was sent.
      auto it = std::lower_bound(grants_.begin(), grants_.end(), l->grant->t0,
                                 [](const lease* x, int64_t t) { return x->grant->t1 < t; });
      if (it == grants_.begin())
        continue;
      const auto* top = prefix[static_cast<size_t>(it - grants_.begin()) - 1];
      if (top->grant->token >= l->grant->token)
        violation("tokens",
                  "token " + std::to_string(l->grant->token) + " (" + l->grant->lock
                    + ") is not above token " + std::to_string(top->grant->token) + " ("
                    + top->grant->lock + ") granted before it was asked for",
                  {top->grant, l->grant});
    }
  }

  // 2. At most one valid lease per lock, by the clients' own deadlines.
  void check_overlap() {
    std::map<std::string, std::vector<const lease*>> per_lock;
    for (const auto* l : grants_)
      if (!l->exempt && l->end > l->grant->t1)
        per_lock[l->grant->lock].push_back(l);
    for (auto& [lock, ls] : per_lock) {
      std::sort(ls.begin(), ls.end(),
                [](const lease* a, const lease* b) { return a->grant->t1 < b->grant->t1; });
      const lease* longest = nullptr;
      for (const auto* l : ls) {
        if (longest != nullptr && l->grant->t1 < longest->end) {
          std::vector<const event*> about{longest->grant};
          for (auto* e : longest->ops)
            about.push_back(e);
          about.push_back(l->grant);
          violation("one-holder",
                    lock + ": " + l->grant->owner + " was granted token "
                      + std::to_string(l->grant->token) + " at " + rel(l->grant->t1)
                      + " while " + longest->grant->owner + " (token "
                      + std::to_string(longest->grant->token) + ") still held it until "
                      + rel(longest->end) + " by its own deadline",
                    about);
        }
        if (longest == nullptr || l->end > longest->end)
          longest = l;
      }
    }
  }

  // Returns whether client `c` was frozen by the driver at some time within [from, to].
  bool frozen_within(int c, int64_t from, int64_t to) const {
    for (const auto* f : faults_)
      if (f->kind == "client_pause" && f->client == c && f->t0 <= to && f->t1 >= from)
        return true;
    return false;
  }

  // 3. Fenced writes.
  void check_writes() {
    std::map<std::string, std::vector<const event*>> accepted;
    for (const auto& e : events_)
      if (e.op == "write" && e.res == "accepted")
        accepted[e.lock].push_back(&e);
    for (auto& [lock, ws] : accepted) {
      std::sort(ws.begin(), ws.end(),
                [](const event* a, const event* b) { return a->t1 < b->t1; });
      std::vector<const event*> prefix;
      for (const auto* w : ws)
        prefix.push_back(prefix.empty() || prefix.back()->token < w->token ? w : prefix.back());
      for (const auto* w : ws) {
        auto it = std::lower_bound(ws.begin(), ws.end(), w->t0,
                                   [](const event* x, int64_t t) { return x->t1 < t; });
        if (it == ws.begin())
          continue;
        const auto* top = prefix[static_cast<size_t>(it - ws.begin()) - 1];
        if (top->token > w->token)
          violation("fenced-writes",
                    lock + ": write with token " + std::to_string(w->token) + " by " + w->owner
                      + " accepted after the write with token " + std::to_string(top->token)
                      + " was accepted",
                    {top, w});
      }
    }
    // Writes within their lease carry the newest token granted before them.
    std::map<std::string, std::vector<const lease*>> grants_per_lock;
    for (const auto* l : grants_)
      grants_per_lock[l->grant->lock].push_back(l); // sorted by answer time, as grants_
    std::map<std::string, std::vector<const lease*>> prefix_per_lock;
    for (auto& [lock, ls] : grants_per_lock) {
      auto& p = prefix_per_lock[lock];
      for (const auto* l : ls)
        p.push_back(p.empty() || p.back()->grant->token < l->grant->token ? l : p.back());
    }
    for (const auto& e : events_) {
      if (e.op != "write" || e.res == "skipped")
        continue;
      auto* own = by_owner_.contains(e.owner) ? by_owner_.at(e.owner) : nullptr;
      if (e.check >= e.deadline)
        violation("fenced-writes",
                  e.lock + ": " + e.owner + " decided at " + rel(e.check)
                    + " to write although its local deadline " + rel(e.deadline)
                    + " had passed (the client broke the deadline rule)",
                  {&e});
      // Sent after the deadline: the client was frozen (or descheduled) between its check and
      // the send. Such a write is owed a rejection only once a newer token was written (above).
      if (e.t0 >= e.deadline) {
        ++late_writes_;
        late_frozen_ += frozen_within(e.client, e.check, e.t0);
        late_rejected_ += e.res == "stale";
        continue;
      }
      if (e.res != "accepted" || (own != nullptr && own->exempt))
        continue;
      const auto& ls = grants_per_lock[e.lock];
      auto it = std::lower_bound(ls.begin(), ls.end(), e.t0,
                                 [](const lease* x, int64_t t) { return x->grant->t1 < t; });
      if (it == ls.begin())
        continue;
      const auto* top = prefix_per_lock[e.lock][static_cast<size_t>(it - ls.begin()) - 1];
      if (top->grant->token > e.token && !top->exempt)
        violation("fenced-writes",
                  e.lock + ": write with token " + std::to_string(e.token) + " by " + e.owner
                    + " within its lease was accepted, but token "
                    + std::to_string(top->grant->token) + " had been granted before it was sent",
                  {top->grant, &e});
    }
    // The stale write of a frozen client, once a newer holder wrote, is rejected.
    for (const auto* f : faults_) {
      if (f->kind != "client_pause" || !f->targeted)
        continue;
      ++targeted_pauses_;
      const event* w = nullptr;
      for (const auto& e : events_)
        if (e.op == "write" && e.paused && e.client == f->client && e.token == f->token
            && e.lock == f->lock) {
          w = &e;
          break;
        }
      if (w == nullptr || !f->newer_written)
        continue; // no write recorded (killed?) or no newer holder wrote in time: nothing owed
      ++stale_after_pause_checked_;
      if (w->res == "stale")
        ++stale_after_pause_rejected_;
      else
        violation("fenced-writes",
                  w->lock + ": the write of " + w->owner + " (token " + std::to_string(w->token)
                    + ") after its pause was answered " + w->res
                    + " although a newer holder had written before it was sent",
                  {f, w});
    }
  }

  // 4. Nothing acknowledged by a request that lived entirely inside an outage of the store.
  // Counts too the requests that a frozen instance held up: sent to it before its thaw and
  // answered after it. Those may succeed (the instance was not cut off from its store); the
  // other checks judge what came of them, the count shows that the freeze had some to judge.
  void check_outages() {
    struct window {
      const event* fault;
      int64_t from, to;
    };
    std::vector<window> ws;
    for (const auto* f : faults_) {
      if (f->kind == "redis_pause" || f->kind == "disk_full")
        ws.push_back({f, f->t0, f->t1});
      else if (f->kind == "redis_kill")
        ws.push_back({f, f->dead, f->relaunch});
    }
    for (const auto& e : events_) {
      if (e.op != "acquire" && e.op != "renew" && e.op != "release")
        continue;
      bool acked = (e.op == "acquire" && e.res == "granted")
                   || ((e.op == "renew" || e.op == "release") && e.res == "ok");
      for (const auto* f : faults_)
        if (f->kind == "instance_pause" && e.inst == f->inst && e.t0 < f->t1 && e.t1 > f->t1) {
          ++held_by_freeze_;
          held_by_freeze_acked_ += acked;
        }
      for (const auto& w : ws) {
        if (e.t0 < w.from || e.t1 > w.to)
          continue;
        ++inside_outages_;
        if (acked)
          violation("fail-closed",
                    e.lock + ": " + e.op + " of " + e.owner + " was acknowledged by a request "
                      + "sent and answered while the store was unreachable (" + w.fault->kind
                      + " " + rel(w.from) + ".." + rel(w.to) + ")",
                    {w.fault, &e});
      }
    }
  }

  // 5. No acknowledged grant or release lost.
  void check_durability() {
    for (const auto& l : leases_) {
      if (l.exempt) {
        for (const auto* e : l.ops)
          lost_by_design_ += e->res == "lost";
        continue;
      }
      int64_t deadline = store_end(l, l.grant->deadline);
      for (const auto* e : l.ops) {
        if (e->op == "lost" && e->code != "deadline" && e->t0 < deadline)
          violation("durability",
                    e->lock + ": the client library of " + e->owner + " was told at " + rel(e->t0)
                      + " (" + e->code + "), before its local deadline " + rel(deadline)
                      + ", that its lease had ended: an acknowledged lease ended early",
                    {l.grant, e});
        // Answered, not just sent, before the deadline: a request that reached the store after
        // the lease's end (a slow store, a restart) is rightly told lease_lost.
        if ((e->op == "renew" || e->op == "release") && e->res == "lost" && e->t1 < deadline)
          violation("durability",
                    e->lock + ": the " + e->op + " of " + e->owner + " was answered lease_lost at "
                      + rel(e->t1) + ", before its local deadline " + rel(deadline)
                      + ": an acknowledged lease ended early",
                    {l.grant, e});
        if (moves_deadline(*e))
          deadline = std::max(deadline, store_end(l, e->deadline));
      }
    }
    // Status probes taken right after a restart.
    for (const auto& p : events_) {
      if (p.op != "probe")
        continue;
      ++probes_;
      const event* crash = nullptr;
      for (const auto* f : faults_)
        if ((f->kind == "instance_kill" || (f->kind == "redis_kill" && !f->empty))
            && f->t0 <= p.t0 && (crash == nullptr || f->t0 > crash->t0))
          crash = f;
      if (crash == nullptr)
        continue;
      uint64_t top = 0;
      for (const auto* l : grants_) {
        if (l->grant->lock != p.lock || l->grant->t1 >= crash->t0 || l->exempt)
          continue;
        top = std::max(top, l->grant->token);
        probe_owed_held_ += l->end > p.t1;
        probe_owed_released_ += l->release_ack != nullptr && l->release_ack->t1 < crash->t0;
        if (l->end > p.t1 && !(p.held && p.token == l->grant->token && p.owner == l->grant->owner))
          violation("durability",
                    p.lock + ": the lease of " + l->grant->owner + " (token "
                      + std::to_string(l->grant->token) + ", valid until " + rel(l->end)
                      + ") was acknowledged before the crash at " + rel(crash->t0)
                      + " but the status after the restart does not show it held",
                    {crash, l->grant, &p});
        if (l->release_ack != nullptr && l->release_ack->t1 < crash->t0 && p.held
            && p.token == l->grant->token)
          violation("durability",
                    p.lock + ": the release of token " + std::to_string(l->grant->token)
                      + " was acknowledged before the crash at " + rel(crash->t0)
                      + " but the status after the restart shows the lease held",
                    {l->release_ack, crash, &p});
      }
      if (store_ == "embedded" && p.has_last_token && p.last_token < top)
        violation("durability",
                  p.lock + ": lastToken " + std::to_string(p.last_token)
                    + " after the restart is below token " + std::to_string(top)
                    + " acknowledged before the crash",
                  {crash, &p});
    }
  }

  void check_liveness() {
    size_t granted = 0, accepted = 0;
    for (const auto& e : events_) {
      granted += e.op == "acquire" && e.res == "granted";
      accepted += e.op == "write" && e.res == "accepted";
      if (e.op == "recovered" && !e.ok)
        violation("liveness",
                  "instance-" + std::to_string(e.inst)
                    + " granted nothing within its bound after the last fault ("
                    + e.code + ")",
                  {&e});
    }
    if (granted == 0 || accepted == 0)
      violation("liveness",
                "the run granted " + std::to_string(granted) + " leases and accepted "
                  + std::to_string(accepted) + " writes: it exercised nothing",
                {&run_});
  }

  std::string summary() const {
    std::ostringstream os;
    os << "chaos check: store=" << store_ << " seed=" << seed_ << " events=" << events_.size()
       << " leases=" << leases_.size() << " (exempt after an empty Redis restart: " << exempt_
       << ") unreadable_lines=" << unreadable_ << "\n  operations:";
    for (const auto& [k, n] : counts_)
      if (!k.starts_with("fault") && k != "clock")
        os << " " << k << "=" << n;
    os << "\n  faults:";
    for (const auto& [k, n] : counts_)
      if (k.starts_with("fault"))
        os << " " << k.substr(6) << "=" << n;
    os << "\n  writes sent after the local deadline: " << late_writes_ << " (in a freeze: "
       << late_frozen_ << "), rejected as stale: " << late_rejected_ << "; targeted pauses: " << targeted_pauses_
       << ", stale writes owed a rejection: " << stale_after_pause_checked_ << ", rejected: "
       << stale_after_pause_rejected_ << "\n  requests sent and answered within an outage of the "
       << "store (each must fail): " << inside_outages_
       << "\n  requests a frozen instance held up and answered after its thaw: " << held_by_freeze_
       << " (acknowledged: " << held_by_freeze_acked_ << ")"
       << "\n  status probes after restarts: " << probes_
       << ", acknowledged leases they had to show held: " << probe_owed_held_
       << ", acknowledged releases they had to show released: " << probe_owed_released_
       << "\n  lease_lost answers or library losses for leases an empty Redis forgot: "
       << lost_by_design_ << "\n";
    if (!clock_.empty()) {
      auto [lo, hi] = std::minmax_element(clock_.begin(), clock_.end(),
                                          [](const event* a, const event* b) {
                                            return a->offset < b->offset;
                                          });
      os << "  wall clock against CLOCK_MONOTONIC: moved within " << ms_text((*hi)->offset - (*lo)->offset)
         << " (" << clock_.size() << " samples); leases the store's clock ended before their "
         << "local deadline: " << ended_early_by_clock_ << ", by up to "
         << ms_text(most_early_by_clock_) << "\n";
    }
    if (!by_property_.empty()) {
      os << "  violations by property:";
      for (const auto& [k, n] : by_property_)
        os << " " << k << "=" << n;
      os << "\n";
    }
    return os.str();
  }

  std::vector<event> events_;
  std::vector<const event*> faults_;
  std::vector<const event*> clock_; // "clock" lines, by time
  event run_;
  std::string store_;
  uint64_t seed_ = 0;
  std::deque<lease> leases_; // stable addresses: grants_ and by_owner_ point into it
  std::vector<const lease*> grants_;
  std::unordered_map<std::string, const lease*> by_owner_;
  std::map<std::string, size_t> counts_;
  std::map<std::string, size_t> by_property_;
  std::ostringstream out_;
  size_t ended_early_by_clock_ = 0;
  int64_t most_early_by_clock_ = 0;
  size_t violations_ = 0, unreadable_ = 0, exempt_ = 0, late_writes_ = 0, late_rejected_ = 0;
  size_t late_frozen_ = 0, inside_outages_ = 0, held_by_freeze_ = 0, held_by_freeze_acked_ = 0;
  size_t targeted_pauses_ = 0, stale_after_pause_checked_ = 0, stale_after_pause_rejected_ = 0;
  size_t probes_ = 0, probe_owed_held_ = 0, probe_owed_released_ = 0, lost_by_design_ = 0;
};

} // namespace

check_result check_history(const std::filesystem::path& dir) {
  checker c{dir};
  return c.run();
}

} // namespace fencelock::chaos
