#include "bench/loader/wire.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace fencelock::bench::wire {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size()
         && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
              return std::tolower(static_cast<unsigned char>(x))
                     == std::tolower(static_cast<unsigned char>(y));
            });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// Decodes a chunked body that starts at `in`; returns the bytes it took, 0 when incomplete, -1
// when malformed.
long parse_chunked(std::string_view in, std::string& body) {
  body.clear();
  std::size_t at = 0;
  for (;;) {
    auto eol = in.find("\r\n", at);
    if (eol == std::string_view::npos)
      return 0;
    std::size_t size = 0;
    auto line = in.substr(at, eol - at);
    auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
    if (ec != std::errc{} || ptr == line.data())
      return -1;
    at = eol + 2;
    if (size == 0) {
      // No trailers are expected: the terminating empty line follows at once.
      if (in.size() < at + 2)
        return 0;
      return in.substr(at, 2) == "\r\n" ? static_cast<long>(at + 2) : -1;
    }
    if (in.size() < at + size + 2)
      return 0;
    body.append(in.substr(at, size));
    at += size + 2;
  }
}

/// Returns where the value of `"key":` starts in `json` (after any spaces), or npos. The
/// loader reads the server's own compact JSON, not arbitrary JSON: the first match wins.
std::size_t value_after(std::string_view json, std::string_view key) {
  std::string pattern;
  pattern.reserve(key.size() + 3);
  pattern.append("\"").append(key).append("\":");
  auto at = json.find(pattern);
  if (at == std::string_view::npos)
    return at;
  at += pattern.size();
  while (at < json.size() && json[at] == ' ')
    ++at;
  return at;
}

} // namespace

long parse_http_response(std::string_view in, http_response& out, std::string& chunked_body) {
  auto head_end = in.find("\r\n\r\n");
  if (head_end == std::string_view::npos)
    return in.size() > 64 * 1024 ? -1 : 0;
  auto head = in.substr(0, head_end + 2);
  if (head.substr(0, 5) != "HTTP/" || head.size() < 12)
    return -1;
  auto sp = head.find(' ');
  int status = 0;
  auto [ptr, ec] = std::from_chars(head.data() + sp + 1, head.data() + head.size(), status);
  if (ec != std::errc{})
    return -1;
  out = http_response{};
  out.status = status;
  std::optional<std::size_t> length;
  bool chunked = false;
  for (auto at = head.find("\r\n") + 2; at < head.size();) {
    auto eol = head.find("\r\n", at);
    auto line = head.substr(at, eol - at);
    at = eol + 2;
    auto colon = line.find(':');
    if (colon == std::string_view::npos)
      continue;
    auto name = line.substr(0, colon);
    auto value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      std::size_t n = 0;
      auto r = std::from_chars(value.data(), value.data() + value.size(), n);
      if (r.ec != std::errc{})
        return -1;
      length = n;
    } else if (iequals(name, "transfer-encoding")) {
      chunked = iequals(value, "chunked");
    } else if (iequals(name, "connection")) {
      out.close = iequals(value, "close");
    }
  }
  auto body_at = head_end + 4;
  if (chunked) {
    auto took = parse_chunked(in.substr(body_at), chunked_body);
    if (took <= 0)
      return took;
    out.body = chunked_body;
    return static_cast<long>(body_at) + took;
  }
  auto n = length.value_or(0);
  if (in.size() < body_at + n)
    return 0;
  out.body = in.substr(body_at, n);
  return static_cast<long>(body_at + n);
}

void append_post(std::string& out, std::string_view host, std::string_view target,
                 std::string_view body) {
  out.append("POST ").append(target).append(" HTTP/1.1\r\nHost: ").append(host);
  out.append("\r\nContent-Type: application/json\r\nContent-Length: ");
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, body.size());
  out.append(digits, end).append("\r\n\r\n").append(body);
}

std::string ws_upgrade_request(std::string_view host, std::string_view target) {
  std::string out;
  out.append("GET ").append(target).append(" HTTP/1.1\r\nHost: ").append(host);
  // A fixed key: the loader does not check the accept value, only the 101.
  out.append("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Key: ZmVuY2Vsb2NrLWxvYWRlcg==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  return out;
}

void append_ws_frame(std::string& out, std::string_view payload, uint8_t opcode) {
  out.push_back(static_cast<char>(0x80 | opcode));
  auto n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(0x80 | n));
  } else if (n < 65536) {
    out.push_back(static_cast<char>(0x80 | 126));
    out.push_back(static_cast<char>((n >> 8) & 0xff));
    out.push_back(static_cast<char>(n & 0xff));
  } else {
    out.push_back(static_cast<char>(0x80 | 127));
    for (int shift = 56; shift >= 0; shift -= 8)
      out.push_back(static_cast<char>((static_cast<uint64_t>(n) >> shift) & 0xff));
  }
  out.append(4, '\0'); // the mask key
  out.append(payload);
}

long parse_ws_frame(std::string_view in, ws_frame& out) {
  if (in.size() < 2)
    return 0;
  auto b0 = static_cast<uint8_t>(in[0]);
  auto b1 = static_cast<uint8_t>(in[1]);
  if ((b1 & 0x80) != 0)
    return -1; // a server never masks
  std::size_t at = 2;
  uint64_t n = b1 & 0x7f;
  if (n == 126) {
    if (in.size() < 4)
      return 0;
    n = (static_cast<uint64_t>(static_cast<uint8_t>(in[2])) << 8)
        | static_cast<uint8_t>(in[3]);
    at = 4;
  } else if (n == 127) {
    if (in.size() < 10)
      return 0;
    n = 0;
    for (int i = 2; i < 10; ++i)
      n = (n << 8) | static_cast<uint8_t>(in[static_cast<std::size_t>(i)]);
    at = 10;
  }
  if (n > 64 * 1024 * 1024)
    return -1;
  if (in.size() < at + n)
    return 0;
  out.opcode = b0 & 0x0f;
  out.fin = (b0 & 0x80) != 0;
  out.payload = in.substr(at, static_cast<std::size_t>(n));
  return static_cast<long>(at + n);
}

std::optional<uint64_t> find_uint(std::string_view json, std::string_view key) {
  auto at = value_after(json, key);
  if (at == std::string_view::npos)
    return std::nullopt;
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(json.data() + at, json.data() + json.size(), v);
  if (ec != std::errc{})
    return std::nullopt;
  return v;
}

std::optional<std::string_view> find_string(std::string_view json, std::string_view key) {
  auto at = value_after(json, key);
  if (at == std::string_view::npos || at >= json.size() || json[at] != '"')
    return std::nullopt;
  auto end = json.find('"', at + 1);
  if (end == std::string_view::npos)
    return std::nullopt;
  return json.substr(at + 1, end - at - 1);
}

std::string base64(std::string_view in) {
  static constexpr char table[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    auto v = (static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << 16)
             | (static_cast<uint32_t>(static_cast<uint8_t>(in[i + 1])) << 8)
             | static_cast<uint8_t>(in[i + 2]);
    out.push_back(table[(v >> 18) & 63]);
    out.push_back(table[(v >> 12) & 63]);
    out.push_back(table[(v >> 6) & 63]);
    out.push_back(table[v & 63]);
  }
  if (i < in.size()) {
    uint32_t v = static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << 16;
    if (i + 1 < in.size())
      v |= static_cast<uint32_t>(static_cast<uint8_t>(in[i + 1])) << 8;
    out.push_back(table[(v >> 18) & 63]);
    out.push_back(table[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? table[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

} // namespace fencelock::bench::wire
