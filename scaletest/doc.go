// Package scaletest runs the gateway the way it is deployed at scale:
// several `a2a-gateway serve` processes that share nothing but a Redis
// Cluster (or Sentinel), requests spread round-robin across them, and
// crashes (SIGKILL) of a gateway process and of a Redis master in the
// middle of the run. Its tests check that tenants stay isolated, that
// dedupe holds within its documented window and that nothing is lost, and
// report what they measured. The package holds only tests.
package scaletest
