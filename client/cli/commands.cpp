// Dispatch of the client commands, and the short ones: acquire, release, renew, status, check,
// list, version, completion, manpage.

#include "client/cli/commands.hpp"

#include <csignal>
#include <exception>
#include <iostream>

#include <pthread.h>

#include <boost/json.hpp>

#include "client/cli/completion.hpp"
#include "client/cli/exit_codes.hpp"
#include "client/cli/output.hpp"
#include "fencelock/client.hpp"

namespace fencelock::cli {

namespace {

// Restores the default handling of SIGINT and SIGTERM (blocked by main() for `serve`): an
// interrupted short command just dies, and the server drops its queued acquire with the socket.
void unblock_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

client_options options_for(const common_args& a, const std::string& owner) {
  auto opts = client_options_of(a);
  opts.owner = owner;
  return opts;
}

} // namespace

client_options client_options_of(const common_args& a) {
  client_options opts;
  opts.url = a.url;
  opts.bearer_token = a.bearer_token;
  opts.tls_ca_file = a.tls_ca_file;
  opts.tls_cert_file = a.tls_cert_file;
  opts.tls_key_file = a.tls_key_file;
  return opts;
}

namespace {

bool table(const common_args& a) {
  return a.output == output_format::table;
}

/// Runs `body` with a client of `a`; reports a client_error as `command` and returns its code.
template <class Body>
int with_client(std::string_view command, const common_args& a, const std::string& owner,
                Body body) {
  unblock_stop_signals();
  try {
    client c{options_for(a, owner)};
    return body(c);
  } catch (const client_error& e) {
    complain(command, e);
    return exit_code_of(e);
  }
}

int acquire_command(const acquire_args& a) {
  return with_client("acquire", a, a.owner, [&](client& c) {
    auto lease = c.acquire(a.name, a.ttl, a.wait);
    auto info = info_of(lease);
    print_line(table(a) ? lease_table(info, wall_now_ms()) : lease_json(info));
    lease.detach(); // the point of this command: the lease outlives the process
    return exit_ok;
  });
}

int release_command(const release_args& a) {
  return with_client("release", a, a.owner, [&](client& c) {
    if (a.force)
      c.force_release(a.name, a.token);
    else
      c.release(a.name, a.token);
    print_line(table(a) ? released_text(a.name, a.token) : released_json());
    return exit_ok;
  });
}

int renew_command(const renew_args& a) {
  return with_client("renew", a, a.owner, [&](client& c) {
    auto info = c.renew(a.name, a.token, a.ttl);
    print_line(table(a) ? lease_table(info, wall_now_ms()) : lease_json(info));
    return exit_ok;
  });
}

int status_command(const status_args& a) {
  return with_client("status", a, "", [&](client& c) {
    auto info = c.status(a.name);
    print_line(table(a) ? status_table({info}, wall_now_ms()) : status_json(info));
    return exit_ok;
  });
}

int check_command(const check_args& a) {
  return with_client("check", a, "", [&](client& c) {
    auto result = c.check(a.name, a.token);
    print_line(table(a) ? check_text(a.name, a.token, result, wall_now_ms())
                        : check_json(a.name, a.token, result));
    return result.current ? exit_ok : exit_lease_lost;
  });
}

int list_command(const list_args& a) {
  return with_client("list", a, "", [&](client& c) {
    auto locks = c.list(a.prefix);
    if (table(a)) {
      print_line(status_table(locks, wall_now_ms()));
    } else {
      for (const auto& l : locks)
        print_line(status_json(l));
    }
    return exit_ok;
  });
}

int version_command(const version_args& a, const cli_context& ctx) {
  if (a.output == output_format::table) {
    print_line(ctx.version);
  } else {
    print_line(boost::json::serialize(boost::json::object{{"version", ctx.version}}));
  }
  return exit_ok;
}

} // namespace

int execute(const cli_command& cmd, const cli_context& ctx) {
  try {
    return std::visit(
      [&](const auto& a) -> int {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, run_args>)
          return run_command(a);
        else if constexpr (std::is_same_v<T, acquire_args>)
          return acquire_command(a);
        else if constexpr (std::is_same_v<T, release_args>)
          return release_command(a);
        else if constexpr (std::is_same_v<T, renew_args>)
          return renew_command(a);
        else if constexpr (std::is_same_v<T, status_args>)
          return status_command(a);
        else if constexpr (std::is_same_v<T, check_args>)
          return check_command(a);
        else if constexpr (std::is_same_v<T, list_args>)
          return list_command(a);
        else if constexpr (std::is_same_v<T, watch_args>)
          return watch_command(a);
        else if constexpr (std::is_same_v<T, version_args>)
          return version_command(a, ctx);
        else if constexpr (std::is_same_v<T, completion_args>) {
          auto docs = describe_commands(ctx);
          print_line(a.shell == "zsh" ? zsh_completion(docs) : bash_completion(docs));
          return exit_ok;
        } else if constexpr (std::is_same_v<T, manpage_args>) {
          print_line(man_page(describe_commands(ctx), ctx.version));
          return exit_ok;
        } else {
          complain("serve", "runs in app/serve.cpp, not here"); // serve_args
          return exit_unavailable;
        }
      },
      cmd);
  } catch (const std::exception& e) {
    complain("", std::string{"unexpected error: "} + e.what());
    return exit_unavailable;
  }
}

} // namespace fencelock::cli
