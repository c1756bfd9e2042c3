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

} // namespace

reply_reader::reply_reader() : reader_(redisReaderCreate()) {
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
    error_ = reader_->errstr;
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
