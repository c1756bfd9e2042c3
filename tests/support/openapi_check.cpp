#include "support/openapi_check.hpp"

#include <cmath>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace fencelock::test {

namespace json = boost::json;

namespace {

/// The schema keywords validate() knows; any other one is reported.
constexpr std::string_view known_keywords[] = {
  "type",  "nullable", "enum",    "required",   "properties", "additionalProperties",
  "items", "minimum",  "maximum", "minLength",  "maxLength",  "pattern",
  "allOf", "oneOf",    "$ref",    "description"};

bool known(std::string_view key) {
  for (auto k : known_keywords)
    if (k == key)
      return true;
  return false;
}

std::string text(const json::value& v) {
  auto s = json::serialize(v);
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

bool is_integer(const json::value& v) {
  if (v.is_int64() || v.is_uint64())
    return true;
  return v.is_double() && std::floor(v.get_double()) == v.get_double();
}

double number_of(const json::value& v) {
  return v.is_int64()    ? static_cast<double>(v.get_int64())
         : v.is_uint64() ? static_cast<double>(v.get_uint64())
                         : v.get_double();
}

bool has_type(const json::value& v, std::string_view type) {
  if (type == "object")
    return v.is_object();
  if (type == "array")
    return v.is_array();
  if (type == "string")
    return v.is_string();
  if (type == "boolean")
    return v.is_bool();
  if (type == "integer")
    return is_integer(v);
  if (type == "number")
    return v.is_number();
  return false;
}

/// Returns the number of UTF-8 code points of `s`.
size_t code_points(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s)
    n += (c & 0xc0) != 0x80 ? 1 : 0;
  return n;
}

std::string lower(std::string_view s) {
  std::string out{s};
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

} // namespace

openapi_check::openapi_check(json::value doc) : doc_(std::move(doc)) {
  if (!doc_.is_object() || !doc_.as_object().contains("paths")
      || !doc_.as_object().contains("openapi")
      || !json::serialize(doc_.at("openapi")).starts_with("\"3.0."))
    throw std::runtime_error("not an OpenAPI 3.0 document");
}

openapi_check openapi_check::from_file(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return openapi_check{json::parse(ss.str())};
}

const json::value& openapi_check::resolve(const json::value& x) const {
  const json::value* cur = &x;
  for (int depth = 0; cur->is_object() && cur->as_object().contains("$ref"); ++depth) {
    if (depth > 16)
      throw std::runtime_error("$ref loop");
    auto ref = std::string{cur->at("$ref").as_string()};
    if (!ref.starts_with("#/"))
      throw std::runtime_error("non-local $ref " + ref);
    std::error_code ec;
    auto* target = doc_.find_pointer(ref.substr(1), ec);
    if (target == nullptr)
      throw std::runtime_error("dangling $ref " + ref);
    cur = target;
  }
  return *cur;
}

std::vector<std::string> openapi_check::dangling_refs() const {
  std::vector<std::string> out;
  std::function<void(const json::value&)> walk = [&](const json::value& v) {
    if (v.is_object()) {
      for (const auto& [key, x] : v.as_object()) {
        if (key == "$ref" && x.is_string()) {
          std::error_code ec;
          auto ref = std::string{x.as_string()};
          if (!ref.starts_with("#/") || doc_.find_pointer(ref.substr(1), ec) == nullptr)
            out.push_back(ref);
        } else {
          walk(x);
        }
      }
    } else if (v.is_array()) {
      for (const auto& x : v.as_array())
        walk(x);
    }
  };
  walk(doc_);
  return out;
}

std::optional<std::string> openapi_check::match(std::string_view path) const {
  auto split = [](std::string_view p) {
    std::vector<std::string_view> parts;
    while (!p.empty()) {
      p.remove_prefix(1); // the '/'
      auto slash = p.find('/');
      parts.push_back(p.substr(0, slash));
      p = slash == std::string_view::npos ? std::string_view{} : p.substr(slash);
    }
    return parts;
  };
  auto got = split(path);
  for (const auto& [key, item] : doc_.at("paths").as_object()) {
    auto want = split(key);
    if (want.size() != got.size())
      continue;
    bool same = true;
    for (size_t i = 0; i < want.size() && same; ++i)
      same = (want[i].starts_with('{') && want[i].ends_with('}') && !got[i].empty())
             || want[i] == got[i];
    if (same)
      return std::string{key};
  }
  return std::nullopt;
}

void openapi_check::validate(const json::value& instance, const json::value& schema_ref,
                             const std::string& where, std::vector<std::string>& out) const {
  const auto& schema_v = resolve(schema_ref);
  if (!schema_v.is_object()) {
    out.push_back(where + ": the schema is not an object");
    return;
  }
  const auto& schema = schema_v.as_object();
  for (const auto& [key, _] : schema)
    if (!known(key))
      out.push_back(where + ": the check does not know the schema keyword \"" + std::string{key}
                    + "\"");
  if (instance.is_null()) {
    if (auto* n = schema.if_contains("nullable"); n != nullptr && n->is_bool() && n->as_bool())
      return;
  }
  if (auto* t = schema.if_contains("type")) {
    if (!has_type(instance, t->as_string())) {
      out.push_back(where + ": expected " + std::string{t->as_string()} + ", got "
                    + text(instance));
      return;
    }
  }
  if (auto* e = schema.if_contains("enum")) {
    bool found = false;
    for (const auto& x : e->as_array())
      found = found || x == instance;
    if (!found)
      out.push_back(where + ": " + text(instance) + " is not one of " + text(*e));
  }
  if (auto* all = schema.if_contains("allOf"))
    for (const auto& sub : all->as_array())
      validate(instance, sub, where, out);
  if (auto* one = schema.if_contains("oneOf")) {
    int matches = 0;
    for (const auto& sub : one->as_array()) {
      std::vector<std::string> errs;
      validate(instance, sub, where, errs);
      matches += errs.empty() ? 1 : 0;
    }
    if (matches != 1)
      out.push_back(where + ": matches " + std::to_string(matches)
                    + " of the oneOf schemas, not exactly one");
  }
  if (instance.is_number()) {
    if (auto* m = schema.if_contains("minimum"); m && number_of(instance) < number_of(*m))
      out.push_back(where + ": " + text(instance) + " is below the minimum " + text(*m));
    if (auto* m = schema.if_contains("maximum"); m && number_of(instance) > number_of(*m))
      out.push_back(where + ": " + text(instance) + " is above the maximum " + text(*m));
  }
  if (instance.is_string()) {
    auto s = std::string_view{instance.as_string()};
    auto n = code_points(s);
    if (auto* m = schema.if_contains("minLength");
        m && n < static_cast<size_t>(m->to_number<int64_t>()))
      out.push_back(where + ": shorter than minLength " + text(*m));
    if (auto* m = schema.if_contains("maxLength");
        m && n > static_cast<size_t>(m->to_number<int64_t>()))
      out.push_back(where + ": longer than maxLength " + text(*m));
    if (auto* p = schema.if_contains("pattern")) {
      std::regex re{std::string{p->as_string()}, std::regex::ECMAScript};
      if (!std::regex_search(s.begin(), s.end(), re))
        out.push_back(where + ": " + text(instance) + " does not match " + text(*p));
    }
  }
  if (instance.is_array()) {
    if (auto* items = schema.if_contains("items")) {
      size_t i = 0;
      for (const auto& x : instance.as_array())
        validate(x, *items, where + "[" + std::to_string(i++) + "]", out);
    }
  }
  if (instance.is_object()) {
    const auto& obj = instance.as_object();
    if (auto* req = schema.if_contains("required"))
      for (const auto& k : req->as_array())
        if (!obj.contains(k.as_string()))
          out.push_back(where + ": the required field \"" + std::string{k.as_string()}
                        + "\" is missing");
    const json::object* props = nullptr;
    if (auto* p = schema.if_contains("properties"))
      props = &p->as_object();
    const auto* extra = schema.if_contains("additionalProperties");
    for (const auto& [key, x] : obj) {
      auto name = where + "." + std::string{key};
      if (props != nullptr && props->contains(key)) {
        validate(x, props->at(key), name, out);
      } else if (extra != nullptr) {
        if (extra->is_bool()) {
          if (!extra->as_bool())
            out.push_back(where + ": the field \"" + std::string{key} + "\" is not allowed");
        } else {
          validate(x, *extra, name, out);
        }
      }
    }
  }
}

std::vector<std::string> openapi_check::validate(const json::value& instance,
                                                 const json::value& schema,
                                                 const std::string& where) const {
  std::vector<std::string> out;
  try {
    validate(instance, schema, where, out);
  } catch (const std::exception& e) {
    out.push_back(where + ": " + e.what());
  }
  return out;
}

std::vector<std::string> openapi_check::check_response(const json::value& response_ref,
                                                       const http_response& res) const {
  std::vector<std::string> out;
  const auto& response = resolve(response_ref).as_object();
  if (auto* headers = response.if_contains("headers")) {
    for (const auto& [name, header_ref] : headers->as_object()) {
      const auto& header = resolve(header_ref).as_object();
      bool required = header.contains("required") && header.at("required").as_bool();
      if (required && !res.has_header(lower(name)))
        out.push_back("the header " + std::string{name} + " is missing");
      if (res.has_header(lower(name)) && header.contains("schema")) {
        auto value = res.header(lower(name));
        const auto& schema = resolve(header.at("schema"));
        json::value v(value);
        if (schema.as_object().contains("type") && schema.at("type").as_string() == "integer") {
          try {
            v = std::stoll(value);
          } catch (...) {
          }
        }
        for (auto& e : validate(v, header.at("schema"), "header " + std::string{name}))
          out.push_back(e);
      }
    }
  }
  auto* content = response.if_contains("content");
  if (content == nullptr) {
    if (!res.body.empty())
      out.push_back("a body where the document lists none: " + res.body.substr(0, 80));
    return out;
  }
  auto type = res.header("content-type");
  auto* media = content->as_object().if_contains(type);
  if (media == nullptr) {
    out.push_back("the content type \"" + type + "\" is not listed");
    return out;
  }
  if (type == "application/json") {
    if (!res.json) {
      out.push_back("the body is not JSON: " + res.body.substr(0, 80));
      return out;
    }
    if (auto* schema = media->as_object().if_contains("schema"))
      for (auto& e : validate(*res.json, *schema, "body"))
        out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> openapi_check::check(std::string_view method, std::string_view target,
                                              const http_response& res) const {
  auto path = target.substr(0, target.find('?'));
  auto key = match(path);
  if (!key)
    return {"no path of the document matches " + std::string{path}};
  const auto& item = doc_.at("paths").at(*key).as_object();
  auto* operation = item.if_contains(lower(method));
  if (operation == nullptr)
    return {"the document has no " + std::string{method} + " " + *key};
  const auto& responses = operation->at("responses").as_object();
  auto status = std::to_string(res.status);
  auto* response = responses.if_contains(status);
  if (response == nullptr)
    response = responses.if_contains("default");
  if (response == nullptr)
    return {std::string{method} + " " + *key + " does not list status " + status};
  auto out = check_response(*response, res);
  for (auto& e : out)
    e = std::string{method} + " " + *key + " " + status + ": " + e;
  return out;
}

std::vector<std::string> openapi_check::check_component(std::string_view name,
                                                        const http_response& res) const {
  std::error_code ec;
  auto* response = doc_.find_pointer("/components/responses/" + std::string{name}, ec);
  if (response == nullptr)
    return {"the document has no components/responses/" + std::string{name}};
  auto out = check_response(*response, res);
  for (auto& e : out)
    e = std::string{name} + ": " + e;
  return out;
}

} // namespace fencelock::test
