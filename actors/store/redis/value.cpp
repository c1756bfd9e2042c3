#include "actors/store/redis/value.hpp"

namespace fencelock::redis {

std::string describe(const value& v) {
  switch (v.type) {
    case value::kind::nil:
      return "nil";
    case value::kind::integer:
      return "integer " + std::to_string(v.integer);
    case value::kind::string:
      return "string of " + std::to_string(v.str.size()) + " bytes";
    case value::kind::status:
      return "status " + v.str.substr(0, 64);
    case value::kind::error:
      return "error " + v.str.substr(0, 200);
    case value::kind::array:
      return "array of " + std::to_string(v.elements.size());
  }
  return "?";
}

} // namespace fencelock::redis
