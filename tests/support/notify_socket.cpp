#include "support/notify_socket.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace fencelock::test {

notify_socket::notify_socket() : path_((dir_.path() / "notify").string()) {
  sockaddr_un addr{};
  if (path_.size() >= sizeof(addr.sun_path))
    throw std::runtime_error("notify socket path too long: " + path_);
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0)
    throw std::runtime_error(std::string{"socket: "} + std::strerror(errno));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    auto e = errno;
    ::close(fd_);
    throw std::runtime_error("bind " + path_ + ": " + std::strerror(e));
  }
}

notify_socket::~notify_socket() {
  ::close(fd_);
}

std::string notify_socket::env() const {
  return "NOTIFY_SOCKET=" + path_;
}

bool notify_socket::receive(std::chrono::milliseconds wait) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0)
    return false;
  bool any = false;
  char buf[4096];
  for (;;) {
    auto n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0)
      return any;
    messages_.emplace_back(buf, static_cast<size_t>(n));
    any = true;
  }
}

std::optional<std::string> notify_socket::wait_for(
  const std::function<bool(std::string_view)>& pred, std::chrono::milliseconds timeout,
  size_t from) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    receive(std::chrono::milliseconds{0});
    for (size_t i = from; i < messages_.size(); ++i)
      if (pred(messages_[i]))
        return messages_[i];
    from = std::max(from, messages_.size());
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return std::nullopt;
    receive(left);
  }
}

std::vector<std::string> notify_socket::messages() {
  receive(std::chrono::milliseconds{0});
  return messages_;
}

std::optional<std::string> notify_socket::field(std::string_view message, std::string_view key) {
  while (!message.empty()) {
    auto nl = message.find('\n');
    auto line = message.substr(0, nl);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == '=')
      return std::string{line.substr(key.size() + 1)};
    if (nl == std::string_view::npos)
      break;
    message.remove_prefix(nl + 1);
  }
  return std::nullopt;
}

} // namespace fencelock::test
