// Package jose is the gateway's one implementation of JOSE and JCS: signing
// keys (generation, PEM files, JWK and JWKS encoding), the asymmetric JWS
// algorithms that sign and verify agent cards, and RFC 8785 JSON
// canonicalisation. Token verification itself stays with golang-jwt in
// package authz; this package holds what the card signer, the push signer,
// the development tokens and the verifiers' key loading share.
package jose
