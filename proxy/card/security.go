package card

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Security describes how clients authenticate to the gateway. The rewrite
// replaces the agent's own schemes with it: clients never meet the agent's
// authentication, only the gateway's. The zero value describes a gateway that
// asks for no credentials and removes every scheme from the card.
type Security struct {
	Schemes []Scheme
	// Requirements are alternatives: a client meets the card's requirement
	// by meeting any one of them, and meets one by presenting every scheme it
	// names. Nil means each scheme alone is an alternative.
	Requirements []Requirement
}

// Requirement maps scheme names to the scopes they need (OAuth 2.0 and
// OpenID Connect); other schemes take an empty list.
type Requirement map[string][]string

// Scheme is one way to authenticate. Exactly one of HTTP, APIKey and
// OpenIDConnect is set.
type Scheme struct {
	// Name is the key under securitySchemes, e.g. "bearer".
	Name        string
	Description string

	HTTP          *HTTPAuth
	APIKey        *APIKey
	OpenIDConnect *OpenIDConnect
}

// HTTPAuth is an Authorization header scheme (RFC 9110 section 11).
type HTTPAuth struct {
	Scheme       string // "Bearer"
	BearerFormat string // "JWT"; a hint only
}

// APIKey is a key passed in a header, query parameter or cookie.
type APIKey struct {
	Location string // "header", "query" or "cookie"
	Name     string
}

// OpenIDConnect points clients at the issuer's discovery document.
type OpenIDConnect struct {
	URL string
}

// Scheme names used by GatewaySecurity.
const (
	SchemeBearer = "bearer"
	SchemeAPIKey = "apiKey"
)

// GatewaySecurity describes the gateway's authentication as configured: a
// JWT bearer token when bearerJWT (an issuer is trusted), and an API key in
// the named header when apiKeyHeader is not empty (API keys are issued). A
// card never advertises a scheme no credential can pass.
func GatewaySecurity(bearerJWT bool, apiKeyHeader string) Security {
	var s Security
	if bearerJWT {
		s.Schemes = append(s.Schemes, Scheme{
			Name:        SchemeBearer,
			Description: "JWT issued by the gateway's trusted identity provider",
			HTTP:        &HTTPAuth{Scheme: "Bearer", BearerFormat: "JWT"},
		})
	}
	if apiKeyHeader != "" {
		s.Schemes = append(s.Schemes, Scheme{
			Name:        SchemeAPIKey,
			Description: "API key issued by the gateway operator",
			APIKey:      &APIKey{Location: "header", Name: apiKeyHeader},
		})
	}
	return s
}

// Validate checks that every scheme is complete, names are unique, and
// requirements name only defined schemes.
func (s Security) Validate() error {
	names := make(map[string]struct{}, len(s.Schemes))
	for i, sc := range s.Schemes {
		if strings.TrimSpace(sc.Name) == "" {
			return fmt.Errorf("%w: security scheme %d has no name", ErrInvalidOptions, i)
		}
		if _, dup := names[sc.Name]; dup {
			return fmt.Errorf("%w: security scheme %q defined twice", ErrInvalidOptions, sc.Name)
		}
		names[sc.Name] = struct{}{}
		if err := sc.validate(); err != nil {
			return fmt.Errorf("%w: security scheme %q: %w", ErrInvalidOptions, sc.Name, err)
		}
	}
	for i, req := range s.Requirements {
		if len(req) == 0 {
			return fmt.Errorf("%w: security requirement %d is empty", ErrInvalidOptions, i)
		}
		for name := range req {
			if _, ok := names[name]; !ok {
				return fmt.Errorf("%w: security requirement %d names undefined scheme %q", ErrInvalidOptions, i, name)
			}
		}
	}
	return nil
}

func (sc Scheme) validate() error {
	set := 0
	for _, p := range []bool{sc.HTTP != nil, sc.APIKey != nil, sc.OpenIDConnect != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return errors.New("exactly one of HTTP, APIKey and OpenIDConnect must be set")
	}
	switch {
	case sc.HTTP != nil:
		if strings.TrimSpace(sc.HTTP.Scheme) == "" {
			return errors.New("HTTP scheme name is empty")
		}
	case sc.APIKey != nil:
		if !slices.Contains([]string{"header", "query", "cookie"}, sc.APIKey.Location) {
			return fmt.Errorf("API key location %q is not header, query or cookie", sc.APIKey.Location)
		}
		if strings.TrimSpace(sc.APIKey.Name) == "" {
			return errors.New("API key name is empty")
		}
	case sc.OpenIDConnect != nil:
		u, err := url.Parse(sc.OpenIDConnect.URL)
		if err != nil || !isHTTP(u) || u.Host == "" {
			return errors.New("OpenID Connect URL must be an absolute http(s) URL")
		}
	}
	return nil
}

func (s Security) requirements() []Requirement {
	if s.Requirements != nil {
		return s.Requirements
	}
	reqs := make([]Requirement, len(s.Schemes))
	for i, sc := range s.Schemes {
		reqs[i] = Requirement{sc.Name: {}}
	}
	return reqs
}

// v03Scheme is the OpenAPI-style scheme object of A2A 0.3.
type v03Scheme struct {
	Type             string `json:"type"`
	Description      string `json:"description,omitempty"`
	Scheme           string `json:"scheme,omitempty"`
	BearerFormat     string `json:"bearerFormat,omitempty"`
	In               string `json:"in,omitempty"`
	Name             string `json:"name,omitempty"`
	OpenIDConnectURL string `json:"openIdConnectUrl,omitempty"`
}

// v10Scheme is the one-of wrapped SecurityScheme message of A2A 1.0 in
// proto JSON: the member name says which kind it is.
type v10Scheme struct {
	APIKey        *v10APIKey `json:"apiKeySecurityScheme,omitempty"`
	HTTP          *v10HTTP   `json:"httpAuthSecurityScheme,omitempty"`
	OpenIDConnect *v10OIDC   `json:"openIdConnectSecurityScheme,omitempty"`
}

type v10APIKey struct {
	Description string `json:"description,omitempty"`
	Location    string `json:"location"`
	Name        string `json:"name"`
}

type v10HTTP struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

type v10OIDC struct {
	Description      string `json:"description,omitempty"`
	OpenIDConnectURL string `json:"openIdConnectUrl"`
}

type v10Requirement struct {
	Schemes map[string]v10StringList `json:"schemes"`
}

type v10StringList struct {
	List []string `json:"list"`
}

func (s Security) v03Schemes() map[string]v03Scheme {
	out := make(map[string]v03Scheme, len(s.Schemes))
	for _, sc := range s.Schemes {
		o := v03Scheme{Description: sc.Description}
		switch {
		case sc.HTTP != nil:
			// OpenAPI spells HTTP scheme names in lower case; they are
			// case-insensitive on the wire.
			o.Type, o.Scheme, o.BearerFormat = "http", strings.ToLower(sc.HTTP.Scheme), sc.HTTP.BearerFormat
		case sc.APIKey != nil:
			o.Type, o.In, o.Name = "apiKey", sc.APIKey.Location, sc.APIKey.Name
		case sc.OpenIDConnect != nil:
			o.Type, o.OpenIDConnectURL = "openIdConnect", sc.OpenIDConnect.URL
		}
		out[sc.Name] = o
	}
	return out
}

func (s Security) v10Schemes() map[string]v10Scheme {
	out := make(map[string]v10Scheme, len(s.Schemes))
	for _, sc := range s.Schemes {
		var o v10Scheme
		switch {
		case sc.HTTP != nil:
			o.HTTP = &v10HTTP{Description: sc.Description, Scheme: sc.HTTP.Scheme, BearerFormat: sc.HTTP.BearerFormat}
		case sc.APIKey != nil:
			o.APIKey = &v10APIKey{Description: sc.Description, Location: sc.APIKey.Location, Name: sc.APIKey.Name}
		case sc.OpenIDConnect != nil:
			o.OpenIDConnect = &v10OIDC{Description: sc.Description, OpenIDConnectURL: sc.OpenIDConnect.URL}
		}
		out[sc.Name] = o
	}
	return out
}

func (s Security) v03Requirements() []map[string][]string {
	reqs := s.requirements()
	out := make([]map[string][]string, len(reqs))
	for i, req := range reqs {
		m := make(map[string][]string, len(req))
		for name, scopes := range req {
			m[name] = nonNil(scopes)
		}
		out[i] = m
	}
	return out
}

func (s Security) v10Requirements() []v10Requirement {
	reqs := s.requirements()
	out := make([]v10Requirement, len(reqs))
	for i, req := range reqs {
		m := make(map[string]v10StringList, len(req))
		for name, scopes := range req {
			m[name] = v10StringList{List: nonNil(scopes)}
		}
		out[i] = v10Requirement{Schemes: m}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// schemeFlavor tells which dialect an existing securitySchemes map is written
// in: 0.3 schemes carry "type", 1.0 schemes are wrapped in a member named
// after their kind. It reports false when the map says neither.
func schemeFlavor(raw json.RawMessage) (dialect, bool) {
	var schemes map[string]map[string]json.RawMessage
	if json.Unmarshal(raw, &schemes) != nil {
		return 0, false
	}
	names := make([]string, 0, len(schemes))
	for name := range schemes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sc := schemes[name]
		if _, ok := sc["type"]; ok {
			return dialectV03, true
		}
		for member := range sc {
			if strings.HasSuffix(member, "SecurityScheme") {
				return dialectV10, true
			}
		}
	}
	return 0, false
}
