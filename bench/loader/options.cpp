#include "bench/loader/options.hpp"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include <boost/json/serialize.hpp>

namespace fencelock::bench {

namespace {

std::string& label_text() {
  static std::string label;
  return label;
}

} // namespace

options::options(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string word = argv[i];
    if (word.rfind("--", 0) != 0)
      throw std::runtime_error("unexpected argument: " + word);
    auto name = word.substr(2);
    if (auto eq = name.find('='); eq != std::string::npos) {
      values_[name.substr(0, eq)].push_back(name.substr(eq + 1));
    } else if (i + 1 < argc && std::string{argv[i + 1]}.rfind("--", 0) != 0) {
      values_[name].push_back(argv[++i]);
    } else {
      values_[name].push_back("");
    }
  }
}

bool options::has(const std::string& name) const {
  return values_.count(name) > 0;
}

std::string options::text(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> options::all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::vector<std::string> options::list(const std::string& name,
                                       const std::vector<std::string>& fallback) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return fallback;
  std::vector<std::string> out;
  for (const auto& v : it->second) {
    std::istringstream is{v};
    for (std::string part; std::getline(is, part, ',');)
      if (!part.empty())
        out.push_back(part);
  }
  return out;
}

double options::number(const std::string& name, double fallback) const {
  return has(name) ? std::stod(text(name)) : fallback;
}

int64_t options::integer(const std::string& name, int64_t fallback) const {
  return has(name) ? std::stoll(text(name)) : fallback;
}

std::vector<int64_t> options::integers(const std::string& name,
                                       const std::vector<int64_t>& fallback) const {
  if (!has(name))
    return fallback;
  std::vector<int64_t> out;
  for (const auto& v : list(name))
    out.push_back(std::stoll(v));
  return out;
}

trial_settings trial_options(const options& o) {
  trial_settings s;
  s.warmup_s = o.number("warmup", 0.5);
  s.duration_s = o.number("duration", 2.0);
  s.threads = static_cast<int>(o.integer("threads", 1));
  return s;
}

void set_label(std::string label) {
  label_text() = std::move(label);
}

void emit(boost::json::object line) {
  if (!label_text().empty())
    line["label"] = label_text();
  auto text = boost::json::serialize(line);
  std::fprintf(stdout, "%s\n", text.c_str());
  std::fflush(stdout);
}

boost::json::object trial_fields(const trial_result& r) {
  boost::json::object out{{"seconds", r.seconds},
                          {"cycles", r.counts.cycles},
                          {"per_s", r.per_second()},
                          {"errors", r.counts.errors},
                          {"latency", r.counts.latency.summary()},
                          {"loader_cpu", r.loader_cpu}};
  if (r.server_cpu >= 0)
    out["server_cpu"] = r.server_cpu;
  if (r.server_switches >= 0)
    out["server_switches"] = r.server_switches;
  if (!r.counts.first_error.empty())
    out["first_error"] = r.counts.first_error;
  if (r.stuck)
    out["stuck"] = true;
  return out;
}

void note(const std::string& text) {
  std::fprintf(stderr, "loader: %s\n", text.c_str());
  std::fflush(stderr);
}

} // namespace fencelock::bench
