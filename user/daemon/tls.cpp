#include "daemon/tls.hpp"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <memory>
#include <type_traits>

namespace shmbpf {

namespace {

gnutls_datum_t datum(const std::string &pem) {
  return {reinterpret_cast<unsigned char *>(const_cast<char *>(pem.data())),
          static_cast<unsigned>(pem.size())};
}

Error gnutls_error(const char *what, int err) {
  return Error{std::string(what) + " (GnuTLS: " + gnutls_strerror(err) + ")"};
}

struct CredentialsFree {
  void operator()(gnutls_certificate_credentials_t c) const {
    gnutls_certificate_free_credentials(c);
  }
};
using Credentials =
    std::unique_ptr<std::remove_pointer_t<gnutls_certificate_credentials_t>, CredentialsFree>;

// The handshake's check of the client's certificate, once it has come.
int verify_client(gnutls_session_t session) {
  // For client authentication: a certificate whose extended key usage says
  // otherwise is refused (none at all allows any).
  gnutls_typed_vdata_st purpose{};
  purpose.type = GNUTLS_DT_KEY_PURPOSE_OID;
  purpose.data = reinterpret_cast<unsigned char *>(const_cast<char *>(GNUTLS_KP_TLS_WWW_CLIENT));
  unsigned status = 0;
  if (gnutls_certificate_verify_peers(session, &purpose, 1, &status) != GNUTLS_E_SUCCESS ||
      status != 0)
    return GNUTLS_E_CERTIFICATE_ERROR;
  return 0;
}

} // namespace

Result<void> check_certificates(const std::string &pem) {
  gnutls_x509_crt_t *certs = nullptr;
  unsigned count = 0;
  const gnutls_datum_t in = datum(pem);
  const int err = gnutls_x509_crt_list_import2(&certs, &count, &in, GNUTLS_X509_FMT_PEM, 0);
  for (unsigned i = 0; i < count; ++i)
    gnutls_x509_crt_deinit(certs[i]);
  gnutls_free(certs);
  if (err < 0)
    return gnutls_error("not a PEM certificate", err);
  if (count == 0)
    return Error{"holds no PEM certificate"};
  return {};
}

Result<void> check_private_key(const std::string &pem) {
  gnutls_x509_privkey_t key = nullptr;
  if (gnutls_x509_privkey_init(&key) != GNUTLS_E_SUCCESS)
    return Error{"cannot read a key (out of memory)"};
  const gnutls_datum_t in = datum(pem);
  const int err = gnutls_x509_privkey_import2(key, &in, GNUTLS_X509_FMT_PEM, nullptr, 0);
  gnutls_x509_privkey_deinit(key);
  if (err == GNUTLS_E_DECRYPTION_FAILED)
    return Error{"the key is encrypted: give it unencrypted, readable by root alone"};
  if (err < 0)
    return gnutls_error("not a PEM private key", err);
  return {};
}

Result<void> check_key_pair(const std::string &cert_pem, const std::string &key_pem) {
  gnutls_certificate_credentials_t raw = nullptr;
  if (gnutls_certificate_allocate_credentials(&raw) != GNUTLS_E_SUCCESS)
    return Error{"cannot check the key (out of memory)"};
  const Credentials cred(raw);
  const gnutls_datum_t cert = datum(cert_pem), key = datum(key_pem);
  const int err =
      gnutls_certificate_set_x509_key_mem2(raw, &cert, &key, GNUTLS_X509_FMT_PEM, nullptr, 0);
  if (err == GNUTLS_E_CERTIFICATE_KEY_MISMATCH)
    return Error{"the key is not the certificate's"};
  if (err < 0)
    return gnutls_error("the certificate and key do not go together", err);
  return {};
}

const char *tls_priorities(TlsVersion min_version) {
  return min_version == TlsVersion::tls13 ? "NORMAL:-VERS-ALL:+VERS-TLS1.3"
                                          : "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";
}

bool require_client_certificate(void *session) {
  if (!session)
    return false;
  auto *s = static_cast<gnutls_session_t>(session);
  gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
  gnutls_session_set_verify_function(s, &verify_client);
  return true;
}

} // namespace shmbpf
