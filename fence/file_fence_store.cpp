#include "fencelock/fence_guard.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <unordered_map>

namespace fencelock {

namespace {

std::error_code last_error() {
  return {errno, std::generic_category()};
}

// Percent-encodes every byte that is not printable ASCII, and '%' and '!' (a line starting with
// '!' is the floor record), so that a name is one space-free word.
std::string encode_name(std::string_view name) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(name.size());
  for (char ch : name) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || c == '%' || c == '!') {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 0xf];
    } else {
      out += ch;
    }
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

bool decode_name(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size())
      return false;
    auto hi = hex_value(in[i + 1]);
    auto lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0)
      return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return !out.empty();
}

bool parse_u64(std::string_view in, uint64_t& out) {
  if (in.empty())
    return false;
  auto [ptr, ec] = std::from_chars(in.data(), in.data() + in.size(), out);
  return ec == std::errc{} && ptr == in.data() + in.size();
}

// Writes all of `data` to `fd`; returns false on error (errno set).
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    auto n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::error_code read_file(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return {};
    return last_error();
  }
  char buf[65536];
  for (;;) {
    auto n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      auto ec = last_error();
      ::close(fd);
      return ec;
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return {};
}

/* Parses the log text into `snap`: the last (highest) mark of each name, ordered by its last
 * record, and the highest floor; marks at or below the floor are dropped. A final line without
 * '\n' is a torn append and is ignored. Returns bad_message on any other malformed line. */
std::error_code parse_log(std::string_view text, fence_snapshot& snap) {
  struct mark_at {
    uint64_t mark = 0;
    size_t seq = 0;
  };
  std::unordered_map<std::string, mark_at> marks;
  uint64_t floor = 0;
  size_t seq = 0;
  std::string name;
  while (!text.empty()) {
    auto eol = text.find('\n');
    if (eol == std::string_view::npos)
      break; // torn last line
    auto line = text.substr(0, eol);
    text.remove_prefix(eol + 1);
    auto sp = line.find(' ');
    if (sp == std::string_view::npos)
      return std::make_error_code(std::errc::bad_message);
    uint64_t value = 0;
    if (!parse_u64(line.substr(sp + 1), value))
      return std::make_error_code(std::errc::bad_message);
    auto word = line.substr(0, sp);
    if (word == "!") {
      floor = std::max(floor, value);
      continue;
    }
    if (!decode_name(word, name))
      return std::make_error_code(std::errc::bad_message);
    auto& m = marks[name];
    m.mark = std::max(m.mark, value);
    m.seq = ++seq;
  }
  std::vector<std::pair<size_t, std::pair<std::string, uint64_t>>> ordered;
  for (auto& [n, m] : marks)
    if (m.mark > floor)
      ordered.push_back({m.seq, {n, m.mark}});
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  snap.marks.clear();
  for (auto& [s, nm] : ordered)
    snap.marks.push_back(std::move(nm));
  snap.floor = floor;
  return {};
}

std::string render(const fence_snapshot& snap) {
  std::string out;
  if (snap.floor > 0)
    out += "! " + std::to_string(snap.floor) + "\n";
  for (auto& [n, m] : snap.marks)
    out += encode_name(n) + " " + std::to_string(m) + "\n";
  return out;
}

// Writes `text` to `tmp`, fsyncs it, renames it over `path` and fsyncs the directory.
std::error_code replace_file(const std::string& path, const std::string& text) {
  auto tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return last_error();
  if (!write_all(fd, text) || ::fsync(fd) != 0) {
    auto ec = last_error();
    ::close(fd);
    ::unlink(tmp.c_str());
    return ec;
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    auto ec = last_error();
    ::unlink(tmp.c_str());
    return ec;
  }
  auto dir = std::filesystem::path{path}.parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return last_error();
  auto rc = ::fsync(dfd);
  auto ec = rc != 0 ? last_error() : std::error_code{};
  ::close(dfd);
  return ec;
}

} // namespace

std::unique_ptr<file_fence_store> file_fence_store::open(const std::string& path,
                                                         std::error_code& ec) {
  ec.clear();
  std::string text;
  if ((ec = read_file(path, text)))
    return nullptr;
  fence_snapshot snap;
  if ((ec = parse_log(text, snap)))
    return nullptr;
  if ((ec = replace_file(path, render(snap))))
    return nullptr;
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) {
    ec = last_error();
    return nullptr;
  }
  return std::unique_ptr<file_fence_store>{new file_fence_store(path, fd, std::move(snap))};
}

file_fence_store::file_fence_store(std::string path, int fd, fence_snapshot snap)
  : path_(std::move(path)), fd_(fd), loaded_(std::move(snap)), floor_(loaded_.floor) {
  // nop
}

file_fence_store::~file_fence_store() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::error_code file_fence_store::load(fence_snapshot& out) {
  std::lock_guard<std::mutex> guard{mtx_};
  out = loaded_;
  return {};
}

std::error_code file_fence_store::save(std::string_view name, uint64_t token) {
  if (name.empty())
    return std::make_error_code(std::errc::invalid_argument);
  return append(encode_name(name) + " " + std::to_string(token) + "\n");
}

std::error_code file_fence_store::save_floor(uint64_t floor) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (floor <= floor_)
      return {};
  }
  auto ec = append("! " + std::to_string(floor) + "\n");
  if (!ec) {
    std::lock_guard<std::mutex> guard{mtx_};
    floor_ = std::max(floor_, floor);
  }
  return ec;
}

std::error_code file_fence_store::append(const std::string& line) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (fd_ < 0)
    return std::make_error_code(std::errc::io_error);
  auto size = ::lseek(fd_, 0, SEEK_END);
  if (size < 0)
    return last_error();
  if (write_all(fd_, line) && ::fdatasync(fd_) == 0)
    return {};
  auto ec = last_error();
  // Cut off a partial line so that it cannot be mistaken for a torn last line later, then refuse
  // every later append (fail closed): after a failed fsync the kernel may have dropped the dirty
  // pages, so what is on disk is unknown until the log is reopened (and re-read).
  static_cast<void>(::ftruncate(fd_, size));
  ::close(fd_);
  fd_ = -1;
  return ec;
}

} // namespace fencelock
