// The config loader (config/load.cpp): an INI file, flags and FENCELOCK_* variables in, a
// validated config or an error naming the key out. Input: "FILE\0FLAGS\0ENVIRONMENT", each of
// the last two one entry per line; the file alone is a whole config file (the seeds are).
//
// The file is written to a memfd and named by a --config flag that always comes first, so no
// input can make the loader read any other file (a second --config is an error).

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <caf/sec.hpp>

#include "config/load.hpp"
#include "fencelock/errc.hpp"
#include "fuzz/fuzz.hpp"

namespace fencelock::fuzz {

namespace {

constexpr std::string_view target_name = "fuzz_config";

void check(bool ok, std::string_view what) {
  if (!ok)
    violated(target_name, what);
}

/// Returns the path of a memfd holding `content` (the same memfd every call).
std::string write_file(std::string_view content) {
  static const int fd = memfd_create("fencelock-fuzz-config", MFD_CLOEXEC);
  check(fd >= 0, "memfd_create works (harness)");
  check(ftruncate(fd, 0) == 0, "ftruncate works (harness)");
  size_t done = 0;
  while (done < content.size()) {
    auto n = pwrite(fd, content.data() + done, content.size() - done,
                    static_cast<off_t>(done));
    check(n > 0, "pwrite works (harness)");
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

/// Splits `x` into its lines (no empty last line).
std::vector<std::string> lines(std::string_view x) {
  std::vector<std::string> out;
  while (!x.empty()) {
    auto eol = x.find('\n');
    out.emplace_back(x.substr(0, eol));
    x = eol == std::string_view::npos ? std::string_view{} : x.substr(eol + 1);
  }
  return out;
}

} // namespace

int fuzz_config(const uint8_t* data, size_t size) {
  std::string_view input{reinterpret_cast<const char*>(data), size};
  auto [file, rest] = split_once(input, '\0');
  auto [flags, env] = split_once(rest, '\0');

  std::vector<std::string> args{"--config", write_file(file)};
  for (auto& x : lines(flags))
    args.push_back(std::move(x));
  auto result = config_loader::load(args, lines(env));
  if (result) {
    if (result->help)
      check(!result->help_text.empty(), "help has a text");
    else
      check(!config_loader::validate(result->cfg), "a loaded config passes validation");
    return 0;
  }
  const auto& err = result.error();
  check(err.category() == caf::atom("system")
          && err.code() == static_cast<uint8_t>(caf::sec::invalid_argument),
        "a refusal is invalid_argument");
  auto message = error_message(err);
  // "key: why". An unknown key is quoted as written, and may itself contain ": " or even
  // ": unknown setting" (fuzz/regressions/fuzz_config/key-starting-with-colon-space): the
  // reason is the last one.
  auto colon = message.find(": ");
  auto unknown = message.rfind(": unknown setting");
  bool names_key = (colon != std::string::npos && colon > 0)
                   || (unknown != std::string::npos && unknown > 0
                       && input.find(message.substr(0, unknown)) != std::string_view::npos);
  if (!names_key)
    violated(target_name, "a refusal starts with the key it is about, but got: " + message);
  return 0;
}

} // namespace fencelock::fuzz
