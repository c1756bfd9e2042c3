#pragma once

// Reads the fields of one JSON object request (an HTTP body or a WebSocket frame), keeping the
// first error. Every read after an error does nothing, so a parser is a straight list of reads
// followed by error(). Errors are invalid_request naming the field.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <caf/error.hpp>

namespace fencelock::net {

enum class presence { required, optional };

/*
 * Returns the first key that some object in the JSON text `text` names twice, at any depth, or
 * nothing when every object's keys are distinct (or `text` is not JSON at all: the caller's own
 * parse reports that). JSON leaves duplicate keys undefined and Boost.JSON keeps the last one,
 * so {"ttlMs":1000,"ttlMs":2000} would quietly mean 2000: the API refuses it instead.
 */
std::optional<std::string> duplicate_key(std::string_view text);

/*
 * The fast path of reading a request: parses `text` into storage `sp` as boost::json::parse
 * would, and returns the value only if `text` is JSON whose objects all have distinct keys, in
 * a single pass. Otherwise returns nothing, and the caller's parse and duplicate_key say why.
 */
std::optional<boost::json::value> parse_distinct(std::string_view text,
                                                 boost::json::storage_ptr sp);

class object_reader {
public:
  /// Parses `text` as a JSON object and rejects a field given twice or outside `known`.
  object_reader(std::string_view text, std::initializer_list<std::string_view> known);

  /// Reads the parsed `object`, which must outlive the reader, rejecting any field outside
  /// `known`.
  object_reader(const boost::json::object& object, std::initializer_list<std::string_view> known);

  object_reader(const object_reader&) = delete;
  object_reader& operator=(const object_reader&) = delete;

  /// Reads a string field.
  void read(std::string_view key, std::string& out, presence p);

  /// Reads a signed integer field; values beyond int64 saturate, so that range checks report
  /// them with the field's range.
  void read(std::string_view key, int64_t& out, presence p);

  /// Reads a boolean field.
  void read(std::string_view key, bool& out, presence p);

  /// Reads a fencing token: an integer in 1..2^53-1.
  void read_token(std::string_view key, uint64_t& out, presence p);

  /// Returns the first error, or none when every read succeeded.
  const caf::error& error() const noexcept {
    return error_;
  }

private:
  void check_known(std::initializer_list<std::string_view> known);

  /// Returns the value of `key`, or null when it is absent (an error when it is required).
  const boost::json::value* find(std::string_view key, presence p);

  void fail(std::string_view key, std::string_view why);

  /// Where a body parsed here lives: a request is small and read once, so it costs no heap
  /// allocation unless it outgrows the buffer (body-limit allows more).
  unsigned char buffer_[1024];
  boost::json::monotonic_resource resource_{buffer_, sizeof buffer_};
  boost::json::object parsed_{boost::json::storage_ptr{&resource_}};
  const boost::json::object* object_ = &parsed_; // what is read
  caf::error error_;
};

} // namespace fencelock::net
