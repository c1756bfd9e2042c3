#include "actors/snapshot.hpp"

#include <memory>

#include <caf/send.hpp>

#include "actors/bridge.hpp"

namespace fencelock {

namespace {

struct snapshot_collector : std::enable_shared_from_this<snapshot_collector> {
  caf::actor bridge;
  list_request page;
  lock_list all;
  callback<lock_list> done;

  void status(std::string name) {
    caf::anon_send(bridge, status_atom_v, std::move(name),
                   reply_to<lock_status>{[self = shared_from_this()](caf::expected<lock_status> x) {
                     if (!x)
                       return self->done(std::move(x.error()));
                     self->all.locks.push_back(std::move(*x));
                     self->done(std::move(self->all));
                   }});
  }

  void next_page() {
    caf::anon_send(bridge, list_atom_v, page,
                   reply_to<lock_list>{[self = shared_from_this()](caf::expected<lock_list> x) {
                     if (!x)
                       return self->done(std::move(x.error()));
                     for (auto& st : x->locks)
                       self->all.locks.push_back(std::move(st));
                     if (x->next_cursor.empty())
                       return self->done(std::move(self->all));
                     self->page.cursor = std::move(x->next_cursor);
                     self->next_page();
                   }});
  }
};

} // namespace

void collect_snapshot(caf::actor bridge, subscribe_request req, uint32_t page_limit,
                      callback<lock_list> done) {
  auto collector = std::make_shared<snapshot_collector>();
  collector->bridge = std::move(bridge);
  collector->done = std::move(done);
  if (req.exact) {
    collector->status(std::move(req.prefix));
  } else {
    collector->page.prefix = std::move(req.prefix);
    collector->page.limit = page_limit;
    collector->next_page();
  }
}

} // namespace fencelock
