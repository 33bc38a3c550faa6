package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// namespaceKeyPrefix starts the record key of an explicit namespace. Mount
// names cannot contain '/', so such a key never equals a mount's name.
const namespaceKeyPrefix = "ns/"

// Upstream is the agent's normalised base URL, which says which mounts
// reach the same agent: scheme and host lower-cased, the port explicit (80
// for http, 443 for https), the path as written but without trailing
// slashes, user information and fragment dropped. The binding paths
// (jsonrpc_path, rest_path) are not part of it: they are two doors of one
// agent. Spellings of one host that this does not unify (an IP address and
// a name, two names) are told apart; the namespace setting joins them.
func (a *Agent) Upstream() string {
	u, err := url.Parse(a.URL)
	if err != nil {
		return a.URL
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	scheme := strings.ToLower(u.Scheme)
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port) + strings.TrimRight(u.EscapedPath(), "/")
}

// RecordKeys maps each mount name to the key its ownership records, dedupe
// records and open-task counts are kept under, so that mounts of one agent
// share them: a task created through one mount is the same task through
// every other. Mounts with the same namespace setting share
// "ns/<namespace>"; mounts without one share the name of the first mount,
// in configuration order, with the same Upstream, so a gateway with one
// mount per agent keeps its records under the mount names.
func RecordKeys(agents []Agent) map[string]string {
	keys := make(map[string]string, len(agents))
	first := map[string]string{}
	for _, a := range agents {
		if a.Namespace != "" {
			keys[a.Name] = namespaceKeyPrefix + a.Namespace
			continue
		}
		up := a.Upstream()
		if _, ok := first[up]; !ok {
			first[up] = a.Name
		}
		keys[a.Name] = first[up]
	}
	return keys
}

// validateNamespaces checks the namespace settings and that the mounts
// sharing records agree on what an owner is: a mount whose tasks belong to
// tenants would otherwise open the tasks a per-subject mount keeps apart,
// and a mount taking client-chosen context ids would reserve ids for a
// mount that refuses them.
func validateNamespaces(agents []Agent, add func(field, format string, args ...any)) {
	keys := RecordKeys(agents)
	firstOf := map[string]int{}
	for i, a := range agents {
		f := fmt.Sprintf("agents[%d]", i)
		if a.Namespace != "" && !agentName.MatchString(a.Namespace) {
			add(f+".namespace", "want letters, digits, '-' or '_' (1-63 characters), got %q", a.Namespace)
			continue
		}
		j, seen := firstOf[keys[a.Name]]
		if !seen {
			firstOf[keys[a.Name]] = i
			continue
		}
		o := agents[j]
		if want := ownership(o.Policy); ownership(a.Policy) != want {
			add(f+".policy.ownership", "must be agents[%d]'s (%s): both keep the records of one agent", j, want)
		}
		if (a.Policy.ClientContextIDs == nil || *a.Policy.ClientContextIDs) != (o.Policy.ClientContextIDs == nil || *o.Policy.ClientContextIDs) {
			add(f+".policy.client_context_ids", "must be agents[%d]'s: both keep the records of one agent", j)
		}
	}
}

// ownership is the policy's ownership with the default spelt out.
func ownership(p Policy) string {
	if p.Ownership == "" {
		return OwnerTenant
	}
	return p.Ownership
}

// NamespaceWarnings are the mount layouts that validate but are likely
// mistakes: mounts of one upstream URL kept apart by different namespace
// settings (or one with and one without), whose tasks a caller could then
// reach through the other mount as ids the gateway never saw.
func NamespaceWarnings(agents []Agent) []string {
	keys := RecordKeys(agents)
	firstOf := map[string]int{}
	var out []string
	for i, a := range agents {
		up := a.Upstream()
		j, seen := firstOf[up]
		if !seen {
			firstOf[up] = i
			continue
		}
		if o := agents[j]; keys[o.Name] != keys[a.Name] {
			out = append(out, fmt.Sprintf("agents[%d] (%s) and agents[%d] (%s) reach the same upstream %s but keep separate task records (namespace %q and %q); give both the same namespace unless they are different agents",
				j, o.Name, i, a.Name, up, o.Namespace, a.Namespace))
		}
	}
	return out
}
