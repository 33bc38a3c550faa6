// Package request holds the values one request carries through the
// gateway's stages and the store: the authenticated caller, the record of
// what the authorization decision lets the answer reveal, and the budget
// the request may wait for the store. It is a leaf, so the pipeline core
// can carry them without importing the packages that produce them.
package request
