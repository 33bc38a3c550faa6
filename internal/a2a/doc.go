// Package a2a holds every fact the gateway knows about the Agent2Agent
// protocol: versions, method names and REST paths, task states and their
// spellings, the transition table, error codes and their wire shapes, and the
// SSE framing. No other package spells a method name or a state string.
package a2a
