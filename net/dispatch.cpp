// Hands a routed request to fencelock::service and turns its answer into a reply: the half of
// the routes that needs a running service, apart from route() (net/routes.cpp), so that the
// request checks build and link without one (the fuzz targets, fuzz/).

#include <utility>

#include <boost/json/object.hpp>

#include "net/error_mapping.hpp"
#include "net/json.hpp"
#include "net/process_metrics.hpp"
#include "net/routes.hpp"

namespace fencelock::net {

namespace {

template <class T>
reply ok(const T& x) {
  reply result;
  result.body = to_json(x);
  return result;
}

/// The body of a grant or renewal, rendered directly: it is the answer to most requests.
reply ok(const lease& x) {
  reply result;
  result.text_type = "application/json";
  result.text = lease_json(x);
  return result;
}

reply ok(bool released) {
  reply result;
  result.text_type = "application/json";
  result.text = released ? R"({"released":true})" : R"({"released":false})";
  return result;
}

/// Wraps `done` into the service callback for a result of type T.
template <class T>
callback<T> answer_with(reply_handler done) {
  return [done = std::move(done)](caf::expected<T> result) {
    done(result ? ok(*result) : error_reply(result.error()));
  };
}

void start(service& svc, acquire_request req, call_context ctx, reply_handler done) {
  svc.acquire(std::move(req), answer_with<lease>(std::move(done)), std::move(ctx));
}

void start(service& svc, renew_request req, call_context ctx, reply_handler done) {
  svc.renew(std::move(req), answer_with<lease>(std::move(done)), std::move(ctx));
}

void start(service& svc, release_request req, call_context ctx, reply_handler done) {
  svc.release(std::move(req), answer_with<bool>(std::move(done)), std::move(ctx));
}

void start(service& svc, check_request req, call_context ctx, reply_handler done) {
  svc.check(std::move(req), answer_with<check_result>(std::move(done)), std::move(ctx));
}

void start(service& svc, status_query query, call_context ctx, reply_handler done) {
  svc.status(std::move(query.name), answer_with<lock_status>(std::move(done)), std::move(ctx));
}

void start(service& svc, list_request req, call_context ctx, reply_handler done) {
  svc.list(std::move(req), answer_with<lock_list>(std::move(done)), std::move(ctx));
}

void start(service& svc, metrics_query, call_context, reply_handler done) {
  // Answered at once on the calling thread: a scrape reads the counters, it waits for nobody.
  reply result;
  result.text_type = "text/plain; version=0.0.4";
  // The service's metrics, then the process's own and the build's (net/process_metrics.hpp).
  result.text = svc.metrics_text() + process_metrics_text();
  done(std::move(result));
}

} // namespace

void dispatch(service& svc, service_call call, call_context ctx, reply_handler done) {
  std::visit(
    [&](auto&& req) { start(svc, std::move(req), std::move(ctx), std::move(done)); },
    std::move(call));
}

} // namespace fencelock::net
