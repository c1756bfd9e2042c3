#include "net/auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <fstream>
#include <sstream>

#include "common/percent_decode.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/owner.hpp"
#include "fencelock/validate.hpp"

namespace fencelock::net {

namespace {

bool parse_hash(std::string_view text, token_hash& out) noexcept {
  if (text.size() != out.size() * 2)
    return false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    int hi = hex_value(text[2 * i]);
    int lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

/// Reads "level:prefix" (`*` = every lock).
bool parse_grant(std::string_view text, std::pair<access, std::string>& out) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos)
    return false;
  auto level = text.substr(0, colon);
  auto prefix = text.substr(colon + 1);
  if (level == "read")
    out.first = access::read;
  else if (level == "lock")
    out.first = access::lock;
  else if (level == "admin")
    out.first = access::admin;
  else
    return false;
  if (prefix == "*")
    out.second.clear();
  else if (valid_lock_name(prefix)) // a prefix of lock names is shaped like one
    out.second = std::string{prefix};
  else
    return false;
  return true;
}

/// The largest `rate:` or `waiters:` an auth file may set.
constexpr uint32_t max_limit = 10'000'000;

/// Reads "rate:N" or "waiters:N" into `who`: nothing when `text` is neither, else whether N is
/// a valid limit.
std::optional<bool> parse_limit(std::string_view text, principal& who) {
  uint32_t* field = nullptr;
  std::string_view value;
  if (text.starts_with("rate:")) {
    field = &who.max_rate;
    value = text.substr(5);
  } else if (text.starts_with("waiters:")) {
    field = &who.max_waiting;
    value = text.substr(8);
  } else {
    return std::nullopt;
  }
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc{} || end != value.data() + value.size() || n == 0 || n > max_limit)
    return false;
  *field = n;
  return true;
}

caf::error line_error(std::size_t line, const std::string& what) {
  return caf::make_error(errc::invalid_request, "line " + std::to_string(line) + ": " + what);
}

caf::error refuse(const principal& who, access need, std::string_view what) {
  return caf::make_error(errc::forbidden, "principal " + who.name + " may not " + to_string(need)
                                            + " " + std::string{what});
}

caf::error need_on_lock(const principal& who, access need, std::string_view lock) {
  if (who.may(need, lock))
    return caf::none;
  return refuse(who, need, lock); // "principal billing may not lock hr:payroll"
}

} // namespace

const char* to_string(access x) noexcept {
  switch (x) {
    case access::read:
      return "read";
    case access::lock:
      return "lock";
    case access::admin:
      return "admin";
  }
  return "unknown";
}

bool principal::may(access need, std::string_view lock) const noexcept {
  return std::any_of(grants.begin(), grants.end(),
                     [&](const auto& g) { return g.first >= need && lock.starts_with(g.second); });
}

bool principal::may_all(access need, std::string_view prefix) const noexcept {
  // Every name under `prefix` is under a granted prefix only if `prefix` itself is.
  return may(need, prefix);
}

token_hash hash_token(std::string_view token) {
  token_hash out{};
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), out.data(), &size, EVP_sha256(), nullptr);
  return out;
}

std::string to_hex(const token_hash& x) {
  constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(x.size() * 2);
  for (auto b : x) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 0xf]);
  }
  return out;
}

caf::expected<auth_table> auth_table::parse(std::string_view text) {
  auth_table result;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    auto eol = text.find('\n');
    auto line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (auto hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    std::vector<std::string_view> words;
    while (!line.empty()) {
      auto start = line.find_first_not_of(" \t\r");
      if (start == std::string_view::npos)
        break;
      line.remove_prefix(start);
      auto end = line.find_first_of(" \t\r");
      words.push_back(line.substr(0, end));
      line = end == std::string_view::npos ? std::string_view{} : line.substr(end);
    }
    if (words.empty())
      continue;
    if (words.size() < 3)
      return line_error(line_no, "expected: <principal> <sha256 of its token, or cert> "
                                 "<level:prefix>...");
    entry e;
    if (!valid_principal_name(words[0]))
      return line_error(line_no, "the principal's name must be 1..64 characters of [A-Za-z0-9._-]");
    e.who.name = std::string{words[0]};
    if (words[1] != "cert") {
      e.hash.emplace();
      if (!parse_hash(words[1], *e.hash))
        return line_error(line_no, "the token's hash must be 64 hex digits (SHA-256), or cert for "
                                   "a client certificate whose subject CN is the name");
    }
    for (std::size_t i = 2; i < words.size(); ++i) {
      if (auto limit = parse_limit(words[i], e.who)) {
        if (!*limit)
          return line_error(line_no, "'" + std::string{words[i]}
                                       + "' is no limit: use rate:N or waiters:N, N from 1 to "
                                       + std::to_string(max_limit));
        continue;
      }
      std::pair<access, std::string> grant;
      if (!parse_grant(words[i], grant))
        return line_error(line_no, "'" + std::string{words[i]}
                                     + "' is no permission: use read:, lock: or admin: followed "
                                       "by a lock-name prefix or *");
      e.who.grants.push_back(std::move(grant));
    }
    for (const auto& other : result.entries_) {
      if (other.who.name == e.who.name)
        return line_error(line_no, "principal " + e.who.name + " is named twice");
      if (other.hash && other.hash == e.hash)
        return line_error(line_no,
                          "the same token is given to " + other.who.name + " and " + e.who.name);
    }
    result.entries_.push_back(std::move(e));
  }
  return result;
}

caf::expected<auth_table> auth_table::load(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return caf::make_error(errc::invalid_request, path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  auto table = parse(text.str());
  if (!table)
    return caf::make_error(errc::invalid_request, path + ": " + error_message(table.error()));
  return table;
}

const principal* auth_table::find(const token_hash& hash) const noexcept {
  const principal* found = nullptr;
  for (const auto& e : entries_) {
    // Every entry is compared in full, whether or not one matched already.
    bool same = e.hash && CRYPTO_memcmp(e.hash->data(), hash.data(), hash.size()) == 0;
    if (same)
      found = &e.who;
  }
  return found;
}

const principal* auth_table::find_certified(std::string_view name) const noexcept {
  for (const auto& e : entries_)
    if (!e.hash && e.who.name == name)
      return &e.who;
  return nullptr;
}

caf::expected<std::shared_ptr<authenticator>> authenticator::open(std::string path) {
  std::shared_ptr<authenticator> result{new authenticator{std::move(path)}};
  if (result->enabled())
    if (auto err = result->reload())
      return err;
  return result;
}

caf::error authenticator::reload() {
  if (!enabled())
    return caf::none;
  auto table = auth_table::load(path_);
  if (!table)
    return std::move(table.error());
  auto fresh = std::make_shared<const auth_table>(std::move(*table));
  std::lock_guard<std::mutex> guard{mutex_};
  table_ = std::move(fresh);
  return caf::none;
}

std::shared_ptr<const principal> authenticator::find(const token_hash& hash) const {
  std::shared_ptr<const auth_table> table;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    table = table_;
  }
  if (!table)
    return nullptr;
  auto* who = table->find(hash);
  if (who == nullptr)
    return nullptr;
  return std::shared_ptr<const principal>{table, who};
}

std::shared_ptr<const principal> authenticator::find_certified(std::string_view name) const {
  std::shared_ptr<const auth_table> table;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    table = table_;
  }
  const auto* who = table ? table->find_certified(name) : nullptr;
  if (who == nullptr)
    return nullptr;
  return std::shared_ptr<const principal>{table, who};
}

std::shared_ptr<const principal> authenticator::identify(std::string_view token,
                                                         std::string_view certificate_name) const {
  if (!token.empty())
    return find(hash_token(token));
  if (!certificate_name.empty())
    return find_certified(certificate_name);
  return nullptr;
}

std::size_t authenticator::size() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return table_ ? table_->size() : 0;
}

std::string_view bearer_token(std::string_view authorization) noexcept {
  constexpr std::string_view scheme = "bearer ";
  if (authorization.size() <= scheme.size())
    return {};
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    char c = authorization[i];
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
    if (c != scheme[i])
      return {};
  }
  auto token = authorization.substr(scheme.size());
  auto start = token.find_first_not_of(' ');
  if (start == std::string_view::npos)
    return {};
  token.remove_prefix(start);
  auto end = token.find_last_not_of(' ');
  return token.substr(0, end + 1);
}

caf::error authorize(const principal& who, acquire_request& x) {
  if (auto err = need_on_lock(who, access::lock, x.name))
    return err;
  x.owner = qualified_owner(who.name, x.owner);
  return caf::none;
}

caf::error authorize(const principal& who, renew_request& x) {
  if (auto err = need_on_lock(who, access::lock, x.name))
    return err;
  x.owner = qualified_owner(who.name, x.owner);
  return caf::none;
}

caf::error authorize(const principal& who, release_request& x) {
  if (x.force) // any principal's lease: the owner is not the caller's, and stays as sent
    return need_on_lock(who, access::admin, x.name);
  if (auto err = need_on_lock(who, access::lock, x.name))
    return err;
  x.owner = qualified_owner(who.name, x.owner);
  return caf::none;
}

caf::error authorize(const principal& who, const check_request& x) {
  return need_on_lock(who, access::read, x.name);
}

caf::error authorize(const principal& who, const list_request& x) {
  if (who.may_all(access::read, x.prefix))
    return caf::none;
  return refuse(who, access::read,
                x.prefix.empty() ? std::string{"every lock"} : "the locks under " + x.prefix);
}

caf::error authorize(const principal& who, const subscribe_request& x) {
  if (x.exact)
    return need_on_lock(who, access::read, x.prefix);
  if (who.may_all(access::read, x.prefix))
    return caf::none;
  return refuse(who, access::read,
                x.prefix.empty() ? std::string{"every lock"} : "the locks under " + x.prefix);
}

caf::error authorize_read(const principal& who, std::string_view lock) {
  return need_on_lock(who, access::read, lock);
}

caf::error authorize_admin(const principal& who) {
  if (who.may_all(access::admin, ""))
    return caf::none;
  return caf::make_error(errc::forbidden,
                         "principal " + who.name + " is not an admin of every lock (admin:*)");
}

caf::error unauthenticated_error() {
  return caf::make_error(
    errc::unauthenticated,
    std::string{"a valid bearer token or client certificate is required (docs/security.md)"});
}

} // namespace fencelock::net
