// Package card re-serves upstream agent cards through the gateway.
//
// Rewrite re-targets a card (A2A 0.3, 1.0, or a hybrid carrying both field
// sets) at the gateway: interface URLs, security schemes, capability
// overrides and signatures. Signer and Verify implement agent card signatures
// (JWS with a detached payload over the RFC 8785 canonical card), and Cache
// fetches, rewrites, caches and serves cards with HTTP validators.
package card
