// Package push holds the building blocks of the push-notification relay that
// concern every outgoing webhook call: which destinations may be called, and
// how a notification proves where it came from.
//
// # Destinations
//
// A webhook URL is supplied by a tenant, so calling it lets the tenant make
// the gateway send requests into whatever network the gateway sits in.
// URLPolicy refuses that twice:
//
//   - at registration, CheckURL wants an absolute http(s) URL without
//     userinfo, https unless the tenant's Allowlist names the host, and every
//     address the host resolves to public or allowlisted. Its *URLError says
//     why in words fit to return to the tenant.
//   - at delivery, the *http.Client from URLPolicy.Client checks the address
//     each connection actually goes to, after DNS, so a name that resolved to
//     a public address at registration and resolves to 127.0.0.1 now (DNS
//     rebinding) is refused at connect time. It follows no redirects and
//     uses no proxy from the environment.
//
// Public is an allowlist: IPv4 unicast or IPv6 global unicast (2000::/3)
// outside every block of the IANA Special-Purpose Address Registries
// (loopback, RFC 1918, shared, link-local, documentation, benchmarking,
// protocol assignments, unique-local, ...). IPv6 forms embedding an IPv4
// address (IPv4-mapped, NAT64, 6to4, Teredo, ...), cloud metadata and
// credentials endpoints (by address and by name), multicast, broadcast,
// unspecified and reserved addresses are refused even for allowlisted
// hosts and inside allowlisted ranges. An Allowlist entry opens its
// destinations on the port it names, or on 80 and 443 without one. Numeric
// host names that some resolvers read as IPv4 ("2130706433", "0177.0.0.1",
// "0x7f.1", "127.1") are refused as names.
//
// # Authenticating notifications
//
// Signer.Sign returns the headers for one delivery attempt:
//
//   - X-A2A-Notification-Token: the push config's token, when it has one.
//   - Authorization: the push config's authentication ("<scheme>
//     <credentials>"), as A2A v1.0 §4.3.3 requires.
//   - a JWT signed by the gateway with claims iss, aud (the webhook URL), iat,
//     exp, jti (the notification id), taskId and request_body_sha256 (hex
//     SHA-256 of the body). A2A's webhook guidance has receivers take the
//     sender's JWT from "Authorization: Bearer", so that is where it goes when
//     the config brings no credentials of its own (no authentication, or only
//     the scheme "Bearer"); otherwise Authorization keeps the config's
//     credentials and the JWT goes in X-A2A-Notification-JWT. Receivers
//     verify it against Signer.JWKS, published by the gateway, and compare
//     request_body_sha256 with the body they received.
//   - optionally, Standard Webhooks headers webhook-id, webhook-timestamp and
//     webhook-signature ("v1," + base64 HMAC-SHA256 over
//     "<id>.<timestamp>.<body>") for receivers that share a secret.
//
// The notification id is the same on every retry of one notification, so
// receivers can deduplicate on jti or webhook-id.
//
// Receiving, in Go, with a shared secret:
//
//	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
//	if err := push.VerifyStandardWebhook(secret, r.Header, body, time.Now(), 0); err != nil {
//		http.Error(w, "bad signature", http.StatusUnauthorized)
//		return
//	}
package push
