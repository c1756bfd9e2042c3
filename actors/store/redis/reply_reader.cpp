#include "actors/store/redis/reply_reader.hpp"

#include <hiredis/hiredis.h>

namespace fencelock::redis {

namespace {

value convert(const redisReply* r) {
  value v;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      v.type = value::kind::string;
      v.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      v.type = value::kind::status;
      v.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      v.type = value::kind::error;
      v.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      v.type = value::kind::integer;
      v.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      v.type = value::kind::array;
      v.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i)
        v.elements.push_back(convert(r->element[i]));
      break;
    default:
      v.type = value::kind::nil;
  }
  return v;
}

// hiredis 0.14 has no limit of its own on an array's count (later versions have maxelements),
// so the reader gets hiredis's own functions with createArray wrapped in a check. A null return
// makes hiredis stop with an out-of-memory error, which next() reports as the real reason.
redisReplyObjectFunctions default_functions;
redisReplyObjectFunctions limited_functions;

void* create_limited_array(const redisReadTask* task, int elements) {
  if (elements < 0 || static_cast<std::size_t>(elements) > max_reply_elements) {
    *static_cast<bool*>(task->privdata) = true;
    return nullptr;
  }
  return default_functions.createArray(task, elements);
}

redisReader* make_reader(bool* too_large) {
  auto* r = redisReaderCreate();
  if (r == nullptr)
    return nullptr;
  static const bool init = [r] {
    default_functions = *r->fn;
    limited_functions = default_functions;
    limited_functions.createArray = create_limited_array;
    return true;
  }();
  static_cast<void>(init);
  r->fn = &limited_functions;
  r->privdata = too_large;
  return r;
}

} // namespace

reply_reader::reply_reader() : reader_(make_reader(&too_large_)) {
}

reply_reader::~reply_reader() {
  if (reader_ != nullptr)
    redisReaderFree(reader_);
}

bool reply_reader::feed(std::string_view bytes) {
  if (reader_ == nullptr) {
    error_ = "out of memory";
    return false;
  }
  if (redisReaderFeed(reader_, bytes.data(), bytes.size()) != REDIS_OK) {
    error_ = reader_->err != 0 ? reader_->errstr : "out of memory";
    return false;
  }
  return true;
}

bool reply_reader::next(std::optional<value>& out) {
  out.reset();
  if (reader_ == nullptr) {
    error_ = "out of memory";
    return false;
  }
  void* raw = nullptr;
  if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
    error_ = too_large_ ? "array of more than " + std::to_string(max_reply_elements)
                            + " elements"
                        : std::string{reader_->errstr};
    return false;
  }
  if (raw == nullptr)
    return true;
  out = convert(static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return true;
}

read_result read_replies(std::string_view bytes) {
  read_result result;
  reply_reader reader;
  if (!reader.feed(bytes)) {
    result.error = reader.error();
    return result;
  }
  for (;;) {
    std::optional<value> v;
    if (!reader.next(v)) {
      result.error = reader.error();
      return result;
    }
    if (!v)
      return result;
    result.replies.push_back(std::move(*v));
  }
}

} // namespace fencelock::redis
