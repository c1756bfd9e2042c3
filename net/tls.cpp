#include "net/tls.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/beast/websocket/teardown.hpp>

#include "fencelock/errc.hpp"

namespace fencelock::net {

namespace ssl = boost::asio::ssl;

namespace {

/// TLS 1.2 suites with forward secrecy and AEAD only (Mozilla's "intermediate" list); TLS 1.3
/// keeps OpenSSL's defaults, which are all of that kind.
constexpr const char* tls12_ciphers =
  "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
  "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

/// Session resumption with client certificates needs a context id (OpenSSL refuses to resume
/// a verified session without one).
constexpr unsigned char session_id_context[] = "fencelock";

caf::error file_error(const char* key, const std::string& path, const std::string& why) {
  return caf::make_error(errc::invalid_request, std::string{key} + ": " + path + ": " + why);
}

caf::expected<std::shared_ptr<ssl::context>> make_context(const std::string& cert,
                                                          const std::string& key,
                                                          const std::string& client_ca) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  auto* native = ctx->native_handle();
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression
                   | ssl::context::single_dh_use);
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_cipher_list(native, tls12_ciphers) != 1)
    return caf::make_error(errc::invalid_request, "no usable TLS 1.2 cipher in this OpenSSL");
  SSL_CTX_set_session_id_context(native, session_id_context, sizeof(session_id_context) - 1);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(cert, ec);
  if (ec)
    return file_error("tls-cert", cert,
                      "cannot be used as a PEM certificate chain (" + ec.message() + ")");
  ctx->use_private_key_file(key, ssl::context::pem, ec);
  // OpenSSL checks the key against the certificate as it loads it ("key values mismatch").
  if (ec && ec.message().find("mismatch") != std::string::npos)
    return file_error("tls-key", key, "does not belong to the certificate in " + cert);
  if (ec)
    return file_error("tls-key", key, "cannot be used as a PEM private key (" + ec.message() + ")");
  if (SSL_CTX_check_private_key(native) != 1)
    return file_error("tls-key", key, "does not belong to the certificate in " + cert);
  if (!client_ca.empty()) {
    ctx->load_verify_file(client_ca, ec);
    if (ec)
      return file_error("tls-client-ca", client_ca,
                        "cannot be read as PEM CA certificates (" + ec.message() + ")");
    // Tell clients which CAs are accepted, so that one with several certificates picks right.
    if (auto* names = SSL_load_client_CA_file(client_ca.c_str()))
      SSL_CTX_set_client_CA_list(native, names);
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  return ctx;
}

} // namespace

caf::expected<std::shared_ptr<tls_credentials>> tls_credentials::open(const config& cfg) {
  if (cfg.tls_cert.empty())
    return std::shared_ptr<tls_credentials>{};
  std::shared_ptr<tls_credentials> result{
    new tls_credentials{cfg.tls_cert, cfg.tls_key, cfg.tls_client_ca}};
  if (auto err = result->reload())
    return err;
  return result;
}

caf::error tls_credentials::reload() {
  auto fresh = make_context(cert_, key_, client_ca_);
  if (!fresh)
    return std::move(fresh.error());
  std::lock_guard<std::mutex> guard{mutex_};
  context_ = std::move(*fresh);
  return caf::none;
}

std::shared_ptr<ssl::context> tls_credentials::current() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return context_;
}

void flex_stream::start_tls(std::shared_ptr<ssl::context> context) {
  // Moved out first: emplace destroys the alternative in place before it constructs the new one.
  tcp_stream tcp{std::move(std::get<tcp_stream>(stream_))};
  context_ = std::move(context);
  stream_.emplace<tls_stream>(std::move(tcp), *context_);
}

void teardown(boost::beast::role_type role, flex_stream& s, boost::system::error_code& ec) {
  using boost::beast::teardown;
  if (s.secure())
    teardown(role, s.tls(), ec);
  else
    teardown(role, std::get<flex_stream::tcp_stream>(s.stream_), ec);
}

std::string client_certificate_name(flex_stream& s) {
  if (!s.secure())
    return {};
  auto* ssl = s.tls().native_handle();
  auto* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK)
    return {};
  auto* subject = X509_get_subject_name(cert);
  int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (index < 0)
    return {};
  auto* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
  unsigned char* utf8 = nullptr;
  int length = ASN1_STRING_to_UTF8(&utf8, data);
  if (length < 0)
    return {};
  std::string name{reinterpret_cast<const char*>(utf8), static_cast<std::size_t>(length)};
  OPENSSL_free(utf8);
  return name;
}

bool looks_like_tls(std::string_view bytes) noexcept {
  return bytes.size() >= 2 && bytes[0] == '\x16' && bytes[1] == '\x03';
}

} // namespace fencelock::net
