package authz

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/a2a-gateway/a2a-gateway/internal/request"
)

const (
	// minAPIKeyBytes keeps guessable keys out of the environment.
	minAPIKeyBytes = 16
	// maxAPIKeyBytes bounds what is hashed per request.
	maxAPIKeyBytes = 1024
)

func validateAPIKey(k *APIKeyOptions, path string) []error {
	var errs []error
	if !validIdentity(k.Name) {
		errs = append(errs, fieldError(path+".name", "required: 1-%d printable bytes", maxIdentityBytes))
	} else if k.Name == APIKeyIssuer {
		errs = append(errs, fieldError(path+".name", "%q is reserved", APIKeyIssuer))
	}
	if !validIdentity(k.Tenant) {
		errs = append(errs, fieldError(path+".tenant", "required: 1-%d printable bytes", maxIdentityBytes))
	}
	errs = append(errs, validateScopes(path+".scopes", k.Scopes)...)
	switch {
	case k.KeyEnv == "" && k.KeySHA256 == "":
		errs = append(errs, fieldError(path+".key_env", "one of key_env or key_sha256 is required"))
	case k.KeyEnv != "" && k.KeySHA256 != "":
		errs = append(errs, fieldError(path+".key_sha256", "give either key_env or key_sha256, not both"))
	case k.KeyEnv != "":
		if !validEnvName(k.KeyEnv) {
			errs = append(errs, fieldError(path+".key_env", "%q is not an environment variable name", k.KeyEnv))
		}
	default:
		if d, err := hex.DecodeString(k.KeySHA256); err != nil || len(d) != sha256.Size {
			errs = append(errs, fieldError(path+".key_sha256", "must be %d hex digits", 2*sha256.Size))
		}
	}
	return errs
}

func validateScopes(path string, scopes []string) []error {
	var errs []error
	for i, s := range scopes {
		if s == "" || strings.ContainsFunc(s, unicode.IsSpace) || strings.ContainsFunc(s, unicode.IsControl) {
			errs = append(errs, fieldError(fmt.Sprintf("%s[%d]", path, i), "scope %q must be non-empty without spaces", s))
		}
	}
	return errs
}

// validEnvName accepts POSIX-portable environment variable names.
func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, c := range []byte(s) {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

type apiKeyEntry struct {
	digest    [sha256.Size]byte
	principal request.Principal
	// index is the entry's place in auth.api_keys, for error messages.
	index int
}

// apiKeyTable holds digests only; raw keys are dropped once hashed.
type apiKeyTable struct {
	entries []apiKeyEntry
}

// newAPIKeyTable reads key_env variables with env, and reports every bad
// key at once; opts must have passed validate. A nil env skips the keys
// held in variables (a check without the secrets at hand).
func newAPIKeyTable(opts []APIKeyOptions, env LookupEnv) (*apiKeyTable, error) {
	t := &apiKeyTable{entries: make([]apiKeyEntry, 0, len(opts))}
	var errs []error
	for i, o := range opts {
		path := fmt.Sprintf("auth.api_keys[%d]", i)
		e := apiKeyEntry{principal: request.Principal{
			Tenant:  o.Tenant,
			Subject: o.Name,
			Scopes:  slices.Clone(o.Scopes),
			Issuer:  APIKeyIssuer,
		}}
		if o.KeyEnv != "" {
			if env == nil {
				continue
			}
			key, ok := env(o.KeyEnv)
			if !ok || key == "" {
				errs = append(errs, fieldError(path+".key_env", "environment variable %q is not set or empty", o.KeyEnv))
				continue
			}
			if len(key) < minAPIKeyBytes || len(key) > maxAPIKeyBytes {
				errs = append(errs, fieldError(path+".key_env", "environment variable %q must hold %d-%d bytes", o.KeyEnv, minAPIKeyBytes, maxAPIKeyBytes))
				continue
			}
			e.digest = sha256.Sum256([]byte(key))
		} else {
			d, err := hex.DecodeString(o.KeySHA256)
			if err != nil || len(d) != sha256.Size {
				errs = append(errs, fieldError(path+".key_sha256", "must be %d hex digits", 2*sha256.Size))
				continue
			}
			copy(e.digest[:], d)
		}
		if j := slices.IndexFunc(t.entries, func(prev apiKeyEntry) bool { return prev.digest == e.digest }); j >= 0 {
			errs = append(errs, fieldError(path, "same key as auth.api_keys[%d]", t.entries[j].index))
			continue
		}
		e.index = i
		t.entries = append(t.entries, e)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// lookup compares the presented key's digest with every entry without
// stopping early, so timing reveals neither which key nor how much matched.
func (t *apiKeyTable) lookup(key string) (*request.Principal, bool) {
	if t == nil || len(t.entries) == 0 || len(key) > maxAPIKeyBytes {
		return nil, false
	}
	d := sha256.Sum256([]byte(key))
	match := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return nil, false
	}
	p := t.entries[match].principal
	p.Scopes = slices.Clone(p.Scopes)
	return &p, true
}
