// Authentication and permissions (net/auth.hpp, docs/security.md): the auth file, tokens, the
// permission matrix over every operation of both front ends, and owners qualified by principal.

#include <catch2/catch.hpp>

#include <optional>

#include <boost/json/parse.hpp>

#include "fencelock/errc.hpp"
#include "fencelock/owner.hpp"
#include "fencelock/validate.hpp"
#include "net/auth.hpp"
#include "net/principal_limits.hpp"
#include "net/json.hpp"
#include "net/routes.hpp"
#include "net/ws_protocol.hpp"

using namespace fencelock;
using namespace fencelock::net;

namespace {

std::string hash_of(std::string_view token) {
  return to_hex(hash_token(token));
}

auth_table example_table() {
  auto text = "# principal  token hash  permissions\n"
              "billing   "
              + hash_of("billing-secret")
              + "  lock:billing:\n"
                "dashboard "
              + hash_of("dash-secret")
              + "  read:*   # read-only\n"
                "ops       "
              + hash_of("ops-secret")
              + "  admin:*\n"
                "\n"
                "audit     "
              + hash_of("audit-secret") + "  read:billing: read:hr:\n";
  auto table = auth_table::parse(text);
  REQUIRE(table);
  return std::move(*table);
}

const principal& who(const auth_table& t, std::string_view token) {
  const auto* p = t.find(hash_token(token));
  REQUIRE(p != nullptr);
  return *p;
}

std::optional<errc> code(const caf::error& err) {
  errc x;
  if (!err || !as_errc(err, x))
    return std::nullopt;
  return x;
}

} // namespace

TEST_CASE("an auth file maps token hashes to principals", "[auth]") {
  auto t = example_table();
  CHECK(t.size() == 4);
  CHECK(who(t, "billing-secret").name == "billing");
  CHECK(who(t, "ops-secret").name == "ops");
  CHECK(t.find(hash_token("wrong")) == nullptr);
  CHECK(t.find(hash_token("")) == nullptr);
  CHECK(t.find(hash_token("billing-secret ")) == nullptr);
  // The well-known SHA-256 of "abc": the file holds what `sha256sum` prints.
  CHECK(hash_of("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("an invalid auth file is refused with the line and the reason", "[auth]") {
  auto refused = [](const std::string& text) {
    auto t = auth_table::parse(text);
    REQUIRE_FALSE(t);
    return error_message(t.error());
  };
  auto h = hash_of("x");
  CHECK(refused("a " + h + "\n")
        == "line 1: expected: <principal> <sha256 of its token, or cert> "
           "<level:prefix>...");
  CHECK(refused("# c\nb@d " + h + " read:*\n").starts_with("line 2: the principal's name"));
  CHECK(refused("a deadbeef read:*\n").starts_with("line 1: the token's hash must be 64 hex"));
  CHECK(refused("a " + h + " write:*\n").starts_with("line 1: 'write:*' is no permission"));
  CHECK(refused("a " + h + " read\n").starts_with("line 1: 'read' is no permission"));
  CHECK(refused("a " + h + " read:\n").starts_with("line 1: 'read:' is no permission"));
  CHECK(refused("a " + h + " read:a/b\n").starts_with("line 1: 'read:a/b' is no permission"));
  CHECK(refused("a " + h + " read:*\na " + hash_of("y") + " read:*\n")
        == "line 2: principal a is named twice");
  CHECK(refused("a " + h + " read:*\nb " + h + " read:*\n")
        == "line 2: the same token is given to a and b");
  // Empty files and comments only are valid: nobody may do anything.
  auto empty = auth_table::parse("# nobody yet\n\n");
  REQUIRE(empty);
  CHECK(empty->size() == 0);
}

TEST_CASE("a cert principal is found by its name, never by a token", "[auth]") {
  auto t = auth_table::parse("billing cert lock:billing:\nreader " + hash_of("r") + " read:*\n");
  REQUIRE(t);
  CHECK(t->size() == 2);
  REQUIRE(t->find_certified("billing") != nullptr);
  CHECK(t->find_certified("billing")->may(access::lock, "billing:a"));
  CHECK(t->find_certified("reader") == nullptr); // a token principal is no certificate's
  CHECK(t->find_certified("Billing") == nullptr);
  CHECK(t->find_certified("") == nullptr);
  CHECK(t->find(hash_token("cert")) == nullptr);
  CHECK(t->find(hash_token("r"))->name == "reader");
  // Two cert principals are fine (no token to share); a name still only once.
  CHECK(auth_table::parse("a cert read:*\nb cert read:*\n"));
  CHECK_FALSE(auth_table::parse("a cert read:*\na " + hash_of("x") + " read:*\n"));
}

TEST_CASE("an auth file line may limit its principal's rate and waiters", "[auth]") {
  auto t = auth_table::parse("tenant " + hash_of("t") + " lock:t: rate:50 waiters:3\n" + "free "
                             + hash_of("f") + " lock:f:\n");
  REQUIRE(t);
  const auto& tenant = *t->find(hash_token("t"));
  CHECK(tenant.max_rate == 50);
  CHECK(tenant.max_waiting == 3);
  CHECK(tenant.may(access::lock, "t:a")); // the limits are no permissions
  CHECK(tenant.grants.size() == 1);
  CHECK(t->find(hash_token("f"))->max_rate == 0);
  CHECK(t->find(hash_token("f"))->max_waiting == 0);
  auto refused = [](const std::string& word) {
    auto r = auth_table::parse("a " + hash_of("x") + " read:* " + word + "\n");
    REQUIRE_FALSE(r);
    return error_message(r.error());
  };
  for (auto word : {"rate:0", "rate:", "rate:x", "rate:-1", "waiters:10000001", "waiters:2.5"})
    CHECK(refused(word).starts_with("line 1: '" + std::string{word} + "' is no limit"));
}

TEST_CASE("a principal's rate is shared by its connections, its waiters counted", "[auth]") {
  principal tenant{"tenant", {}, 2, 2};
  principal other{"other", {}, 0, 0};
  principal_limits limits;
  auto t0 = principal_limits::clock::now();
  CHECK(limits.admit(tenant, t0));
  CHECK(limits.admit(tenant, t0));
  CHECK_FALSE(limits.admit(tenant, t0)); // a burst of 2, whatever connection sends it
  CHECK(limits.admit(tenant, t0 + std::chrono::milliseconds{500})); // refilled at 2/s
  CHECK_FALSE(limits.admit(tenant, t0 + std::chrono::milliseconds{500}));
  for (int i = 0; i < 100; ++i)
    CHECK(limits.admit(other, t0)); // unlimited, and not slowed by the tenant
  // A reload that raises the rate takes effect at once.
  principal raised{"tenant", {}, 10, 2};
  CHECK(limits.admit(raised, t0 + std::chrono::milliseconds{500}));

  CHECK(limits.start_waiting(tenant));
  CHECK(limits.start_waiting(tenant));
  CHECK_FALSE(limits.start_waiting(tenant));
  CHECK(limits.waiting("tenant") == 2);
  limits.end_waiting("tenant");
  CHECK(limits.start_waiting(tenant));
  CHECK(limits.start_waiting(other));
  CHECK(limits.waiting("other") == 0); // not counted without a cap
  limits.end_waiting("nobody");        // harmless
  CHECK(code(principal_limits::over_waiters(tenant)) == errc::too_many_waiters);
  CHECK(principal_limits::over_rate(tenant).find("rate:2") != std::string::npos);
}

TEST_CASE("bearer tokens are read from the Authorization header", "[auth]") {
  CHECK(bearer_token("Bearer abc") == "abc");
  CHECK(bearer_token("bearer  abc ") == "abc");
  CHECK(bearer_token("BEARER x.y-z") == "x.y-z");
  CHECK(bearer_token("Basic YWxhZGRpbjpvcGVuc2VzYW1l").empty());
  CHECK(bearer_token("Bearer").empty());
  CHECK(bearer_token("Bearer    ").empty());
  CHECK(bearer_token("").empty());
}

TEST_CASE("levels include the ones below and prefixes cover the names under them", "[auth]") {
  auto t = example_table();
  const auto& billing = who(t, "billing-secret");
  CHECK(billing.may(access::lock, "billing:invoice"));
  CHECK(billing.may(access::read, "billing:invoice"));
  CHECK_FALSE(billing.may(access::admin, "billing:invoice"));
  CHECK_FALSE(billing.may(access::read, "hr:payroll"));
  CHECK_FALSE(billing.may(access::lock, "billing")); // the prefix is "billing:"
  CHECK(billing.may_all(access::read, "billing:eu:"));
  CHECK_FALSE(billing.may_all(access::read, "bill"));
  CHECK_FALSE(billing.may_all(access::read, ""));
  const auto& dashboard = who(t, "dash-secret");
  CHECK(dashboard.may_all(access::read, ""));
  CHECK_FALSE(dashboard.may(access::lock, "billing:invoice"));
  const auto& audit = who(t, "audit-secret");
  CHECK(audit.may(access::read, "hr:payroll"));
  CHECK(audit.may(access::read, "billing:x"));
  CHECK_FALSE(audit.may(access::read, "eng:x"));
  CHECK(who(t, "ops-secret").may(access::admin, "anything"));
}

TEST_CASE("every HTTP operation needs its permission", "[auth]") {
  namespace http = boost::beast::http;
  auto t = example_table();
  config cfg;
  auto call = [&](http::verb verb, std::string_view target, std::string_view body = "") {
    auto r = route(verb, target, body, cfg, true);
    REQUIRE(std::holds_alternative<service_call>(r));
    return std::get<service_call>(std::move(r));
  };
  auto allowed = [&](std::string_view token, http::verb verb, std::string_view target,
                     std::string_view body = "") {
    auto c = call(verb, target, body);
    auto err = authorize(who(t, token), c, cfg);
    if (err)
      CHECK(code(err) == errc::forbidden);
    return !err;
  };
  const std::string acquire = R"({"owner":"w1","ttlMs":1000})";
  const std::string with_token = R"({"owner":"w1","token":5})";
  struct row {
    http::verb verb;
    std::string target;
    std::string body;
    bool billing, dashboard, ops;
  };
  std::vector<row> matrix = {
    {http::verb::post, "/v1/locks/billing:a/acquire", acquire, true, false, true},
    {http::verb::post, "/v1/locks/billing:a/renew", with_token, true, false, true},
    {http::verb::post, "/v1/locks/billing:a/release", with_token, true, false, true},
    // A force-release is an admin's, on any principal's lease.
    {http::verb::post, "/v1/locks/billing:a/release", R"({"force":true})", false, false, true},
    {http::verb::post, "/v1/locks/billing:a/release", R"({"force":true,"token":5})", false, false,
     true},
    {http::verb::post, "/v1/locks/billing:a/check", R"({"token":5})", true, true, true},
    {http::verb::get, "/v1/locks/billing:a", "", true, true, true},
    {http::verb::get, "/v1/locks?prefix=billing:", "", true, true, true},
    {http::verb::get, "/v1/locks", "", false, true, true},
    {http::verb::post, "/v1/locks/hr:a/acquire", acquire, false, false, true},
    {http::verb::get, "/v1/locks/hr:a", "", false, true, true},
    {http::verb::get, "/metrics", "", false, false, true},
  };
  for (const auto& r : matrix) {
    INFO(r.target);
    CHECK(allowed("billing-secret", r.verb, r.target, r.body) == r.billing);
    CHECK(allowed("dash-secret", r.verb, r.target, r.body) == r.dashboard);
    CHECK(allowed("ops-secret", r.verb, r.target, r.body) == r.ops);
  }
  // open-metrics lets every principal (and, before this, anyone) read /metrics.
  cfg.open_metrics = true;
  CHECK(allowed("billing-secret", http::verb::get, "/metrics"));
}

TEST_CASE("only probes and the API document are open with authentication", "[auth]") {
  config cfg;
  CHECK_FALSE(needs_credentials("/healthz", cfg));
  CHECK_FALSE(needs_credentials("/v1/openapi.json", cfg));
  CHECK_FALSE(needs_credentials("/readyz", cfg));
  CHECK(needs_credentials("/metrics", cfg));
  CHECK(needs_credentials("/v1/locks", cfg));
  CHECK(needs_credentials("/v1/locks/a?x=1", cfg));
  CHECK(needs_credentials("/v1/ws", cfg));
  CHECK(needs_credentials("/nope", cfg));
  cfg.open_readyz = false;
  cfg.open_metrics = true;
  CHECK(needs_credentials("/readyz", cfg));
  CHECK_FALSE(needs_credentials("/metrics?name=x", cfg));
  auto r = unauthenticated_reply();
  CHECK(r.status == boost::beast::http::status::unauthorized);
  CHECK(r.body.at("error").as_string() == "unauthenticated");
  REQUIRE(r.headers.size() == 1);
  CHECK(r.headers[0].first == "WWW-Authenticate");
}

TEST_CASE("every WebSocket operation needs its permission", "[auth]") {
  auto t = example_table();
  config cfg;
  auto allowed = [&](std::string_view token, const std::string& frame) {
    auto parsed = parse_ws_request(frame, cfg);
    REQUIRE(std::holds_alternative<ws_request>(parsed));
    auto err = authorize(who(t, token), std::get<ws_request>(parsed).call);
    if (err)
      CHECK(code(err) == errc::forbidden);
    return !err;
  };
  const std::string acquire =
    R"({"id":1,"op":"acquire","lock":"billing:a","owner":"w","ttlMs":1000})";
  const std::string renew = R"({"id":1,"op":"renew","lock":"billing:a","owner":"w","token":5})";
  const std::string release = R"({"id":1,"op":"release","lock":"billing:a","owner":"w","token":5})";
  const std::string status = R"({"id":1,"op":"status","lock":"billing:a"})";
  const std::string check = R"({"id":1,"op":"check","lock":"billing:a","token":5})";
  const std::string sub_one = R"({"id":1,"op":"subscribe","lock":"billing:a"})";
  const std::string sub_all = R"({"id":1,"op":"subscribe","prefix":""})";
  const std::string unsub = R"({"id":1,"op":"unsubscribe","subscription":3})";
  const std::string login = R"({"id":1,"op":"auth","token":"x"})";
  for (const auto* frame : {&acquire, &renew, &release}) {
    CHECK(allowed("billing-secret", *frame));
    CHECK_FALSE(allowed("dash-secret", *frame));
    CHECK_FALSE(allowed("audit-secret", *frame));
  }
  const std::string force = R"({"id":1,"op":"release","lock":"billing:a","force":true})";
  CHECK_FALSE(allowed("billing-secret", force));
  CHECK_FALSE(allowed("dash-secret", force));
  CHECK(allowed("ops-secret", force));
  for (const auto* frame : {&status, &check, &sub_one}) {
    CHECK(allowed("billing-secret", *frame));
    CHECK(allowed("dash-secret", *frame));
    CHECK(allowed("audit-secret", *frame));
  }
  CHECK_FALSE(allowed("billing-secret", sub_all));
  CHECK_FALSE(allowed("audit-secret", sub_all));
  CHECK(allowed("dash-secret", sub_all));
  CHECK(allowed("dash-secret", unsub));
  CHECK(allowed("dash-secret", login));
}

TEST_CASE("a principal's owners are qualified, and shown as label and principal", "[auth]") {
  auto t = example_table();
  acquire_request req{"billing:a", "worker-1", 1000, 0, 1};
  REQUIRE_FALSE(authorize(who(t, "billing-secret"), req));
  CHECK(req.owner == std::string{"billing"} + principal_separator + "worker-1");
  CHECK(owner_principal(req.owner) == "billing");
  CHECK(owner_label(req.owner) == "worker-1");
  // The same label from another principal is another owner.
  acquire_request other{"billing:a", "worker-1", 1000, 0, 2};
  REQUIRE_FALSE(authorize(who(t, "ops-secret"), other));
  CHECK(other.owner != req.owner);
  // No label can pass for a qualified owner: a label is printable ASCII only.
  CHECK_FALSE(valid_owner(req.owner));
  // Without authentication an owner is its label.
  CHECK(owner_principal("worker-1").empty());
  CHECK(owner_label("worker-1") == "worker-1");
  // What clients read: the label, and the principal beside it.
  boost::json::object shown;
  put_owner(shown, req.owner);
  CHECK(shown.at("owner").as_string() == "worker-1");
  CHECK(shown.at("principal").as_string() == "billing");
  boost::json::object plain;
  put_owner(plain, "worker-1");
  CHECK(plain.at("owner").as_string() == "worker-1");
  CHECK_FALSE(plain.contains("principal"));
}

TEST_CASE("a force-release keeps the owner it was sent: it acts on another's lease", "[auth]") {
  auto t = example_table();
  release_request req{"billing:a", "", 7};
  req.force = true;
  REQUIRE_FALSE(authorize(who(t, "ops-secret"), req));
  CHECK(req.owner.empty()); // not qualified as ops's: the lock actor ends whoever's lease
  CHECK(req.token == 7);
}

TEST_CASE("the service accepts owners qualified by a principal, and only well-formed ones",
          "[auth]") {
  config cfg;
  auto acquire = [&](std::string owner) {
    return !validate(acquire_request{"a", std::move(owner), 1000, 0, 1}, cfg);
  };
  CHECK(acquire("worker-1"));
  CHECK(acquire(qualified_owner("billing", "worker-1")));
  CHECK_FALSE(acquire(qualified_owner("bill ing", "worker-1")));
  CHECK_FALSE(acquire(qualified_owner("billing", "")));
  CHECK_FALSE(acquire(std::string{principal_separator} + "worker-1"));
  CHECK_FALSE(acquire(qualified_owner("billing", qualified_owner("ops", "worker-1"))));
}
