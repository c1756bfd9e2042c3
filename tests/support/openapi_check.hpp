#pragma once

// Checks real HTTP answers against an OpenAPI 3.0 document (docs/openapi.json), so that the
// document cannot drift from the server. A small validator of the JSON Schema subset the
// document uses: type (integer apart from number), nullable, enum, required, properties,
// additionalProperties (false or a schema), items, minimum, maximum, minLength, maxLength,
// pattern, allOf, oneOf and local $ref. Anything else in a schema is reported, not ignored, so
// that the document cannot quietly outgrow the check.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "support/http_client.hpp"

namespace fencelock::test {

class openapi_check {
public:
  /// Takes the parsed document. Throws std::runtime_error when it is not an OpenAPI 3.0 object.
  explicit openapi_check(boost::json::value doc);

  /// Reads and parses the document at `path`.
  static openapi_check from_file(const std::string& path);

  /// Returns the document.
  const boost::json::value& document() const noexcept {
    return doc_;
  }

  /// Returns the path template of `paths` that `path` (no query string) matches, e.g.
  /// "/v1/locks/{name}/acquire" for "/v1/locks/a/acquire"; nothing when none does.
  std::optional<std::string> match(std::string_view path) const;

  /*
   * Checks `res`, the answer to `method target`, against the document: the operation must
   * exist, list the status (or "default"), and the answer must carry the listed content type,
   * a body valid for its schema (JSON bodies) and the required headers. Returns what is wrong;
   * empty when the answer conforms.
   */
  std::vector<std::string> check(std::string_view method, std::string_view target,
                                 const http_response& res) const;

  /// Checks `res` against components/responses/<name>: for answers the document describes
  /// outside any operation (an unknown path, a wrong method, malformed HTTP, max-connections).
  std::vector<std::string> check_component(std::string_view name, const http_response& res) const;

  /// Validates `instance` against `schema`; `where` names the instance in the messages.
  /// Returns what is wrong; empty when valid.
  std::vector<std::string> validate(const boost::json::value& instance,
                                    const boost::json::value& schema,
                                    const std::string& where) const;

  /// Returns every $ref in the document that does not resolve.
  std::vector<std::string> dangling_refs() const;

private:
  const boost::json::value& resolve(const boost::json::value& x) const;
  void validate(const boost::json::value& instance, const boost::json::value& schema,
                const std::string& where, std::vector<std::string>& out) const;
  std::vector<std::string> check_response(const boost::json::value& response,
                                          const http_response& res) const;

  boost::json::value doc_;
};

} // namespace fencelock::test
