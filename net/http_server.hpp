#pragma once

// The HTTP/JSON front end on Boost.Beast: a listener and one session per connection, each on its
// own strand. It validates every request at the edge and calls fencelock::service asynchronously;
// no I/O thread ever waits on an actor.

#include <cstdint>
#include <memory>

#include <caf/error.hpp>

#include "fencelock/config.hpp"
#include "fencelock/service.hpp"
#include "net/auth.hpp"
#include "net/tls.hpp"

namespace fencelock::net {

class http_server {
public:
  /// Prepares a server for `svc` with the network settings of `cfg`; `svc` must outlive it.
  /// `auth` authenticates requests when it is enabled (null: no authentication); with `tls`
  /// every connection speaks TLS (null: plain HTTP).
  http_server(service& svc, const config& cfg, std::shared_ptr<authenticator> auth = nullptr,
              std::shared_ptr<tls_credentials> tls = nullptr);

  /// Stops the server if it still runs.
  ~http_server();

  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Binds host:port and starts the I/O threads; returns an error naming the address on failure.
  caf::error start();

  /// Returns the bound port (useful when the configured port was 0).
  uint16_t port() const noexcept;

  /// Stops accepting, closes connections and joins the I/O threads.
  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace fencelock::net
