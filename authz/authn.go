package authz

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/golang-jwt/jwt/v5"
)

// Defaults applied to zero-valued options.
const (
	DefaultRealm                  = "a2a-gateway"
	DefaultJWKSRefresh            = 15 * time.Minute
	DefaultJWKSMinRefreshInterval = 30 * time.Second
	DefaultJWKSTimeout            = 10 * time.Second
	DefaultLeeway                 = 30 * time.Second
	DefaultTenantClaim            = "tenant"
	DefaultSubjectClaim           = "sub"
	DefaultScopeClaim             = "scope"
)

// maxKidBytes bounds the key id a token may name; it is only a map key.
const maxKidBytes = 256

// Options is the `auth:` section of the configuration; IssuerOptions and
// APIKeyOptions are its entries. They are defined with the rest of the
// configuration; this package validates what needs its algorithm tables.
type (
	Options       = config.AuthOptions
	IssuerOptions = config.IssuerOptions
	APIKeyOptions = config.APIKeyOptions
)

func fieldError(path, format string, args ...any) error {
	return fmt.Errorf(path+": "+format, args...)
}

// Validate reports every problem with the options, each prefixed by its
// field path (auth.issuers[0].algorithms: ...). It does not read the
// environment or key files; NewAuthenticator does.
func Validate(o *Options) error {
	var errs []error
	if len(o.Issuers) == 0 && len(o.APIKeys) == 0 {
		errs = append(errs, fieldError("auth", "configure at least one issuer or api key"))
	}
	if strings.ContainsAny(o.Realm, "\"\\") || strings.ContainsFunc(o.Realm, unicode.IsControl) {
		errs = append(errs, fieldError("auth.realm", "must not contain quotes, backslashes or control characters"))
	}
	names := map[string]int{}
	issuers := map[string]int{}
	for i := range o.Issuers {
		is := &o.Issuers[i]
		path := fmt.Sprintf("auth.issuers[%d]", i)
		errs = append(errs, validateIssuer(is, path)...)
		if j, dup := names[is.Name]; dup && is.Name != "" {
			errs = append(errs, fieldError(path+".name", "%q is also the name of auth.issuers[%d]", is.Name, j))
		} else {
			names[is.Name] = i
		}
		if j, dup := issuers[is.Issuer]; dup && is.Issuer != "" {
			errs = append(errs, fieldError(path+".issuer", "%q is also the issuer of auth.issuers[%d]", is.Issuer, j))
		} else {
			issuers[is.Issuer] = i
		}
	}
	keyNames := map[string]int{}
	for i := range o.APIKeys {
		k := &o.APIKeys[i]
		path := fmt.Sprintf("auth.api_keys[%d]", i)
		errs = append(errs, validateAPIKey(k, path)...)
		if j, dup := keyNames[k.Name]; dup && k.Name != "" {
			errs = append(errs, fieldError(path+".name", "%q is also the name of auth.api_keys[%d]", k.Name, j))
		} else {
			keyNames[k.Name] = i
		}
	}
	return errors.Join(errs...)
}

func validateIssuer(o *IssuerOptions, path string) []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fieldError(path+"."+field, format, args...))
	}
	if !validIdentity(o.Name) {
		add("name", "required: 1-%d printable bytes", maxIdentityBytes)
	} else if o.Name == APIKeyIssuer {
		add("name", "%q is reserved for api keys", APIKeyIssuer)
	}
	if o.Issuer == "" || strings.ContainsFunc(o.Issuer, unicode.IsControl) {
		add("issuer", "required: the exact \"iss\" of this issuer's tokens")
	}
	if len(o.Audiences) == 0 {
		add("audiences", "at least one audience is required")
	}
	for i, aud := range o.Audiences {
		if aud == "" {
			add(fmt.Sprintf("audiences[%d]", i), "must not be empty")
		}
	}
	hmacNeed, asym := 0, ""
	if len(o.Algorithms) == 0 {
		add("algorithms", "at least one algorithm is required (for example [RS256] or [EdDSA])")
	}
	for _, alg := range o.Algorithms {
		if strings.EqualFold(strings.TrimSpace(alg), "none") {
			add("algorithms", "%q is never allowed", "none")
			continue
		}
		spec, ok := algorithmSpec(alg)
		if !ok {
			add("algorithms", "unsupported algorithm %q (supported: %s)", alg, strings.Join(supportedAlgorithms(), ", "))
			continue
		}
		if spec.family == familyHMAC {
			hmacNeed = max(hmacNeed, spec.minSecret)
		} else if asym == "" {
			asym = alg
		}
	}
	hasKeys := o.JWKSURL != "" || len(o.KeyFiles) > 0
	switch {
	case asym != "" && !hasKeys:
		add("jwks_url", "jwks_url or key_files is required for %s", asym)
	case asym == "" && hasKeys && len(o.Algorithms) > 0:
		add("algorithms", "jwks_url and key_files need an asymmetric algorithm (RS*, PS*, ES*, EdDSA)")
	}
	switch {
	case hmacNeed > 0 && o.HMACSecretEnv == "":
		add("hmac_secret_env", "required when algorithms include HS256, HS384 or HS512")
	case hmacNeed == 0 && o.HMACSecretEnv != "":
		add("hmac_secret_env", "set, but algorithms include no HS256, HS384 or HS512")
	case o.HMACSecretEnv != "" && !validEnvName(o.HMACSecretEnv):
		add("hmac_secret_env", "%q is not an environment variable name", o.HMACSecretEnv)
	}
	if o.JWKSURL != "" {
		if err := checkJWKSURL(o.JWKSURL); err != nil {
			add("jwks_url", "%v", err)
		}
	}
	for i, f := range o.KeyFiles {
		if strings.TrimSpace(f) == "" {
			add(fmt.Sprintf("key_files[%d]", i), "must not be empty")
		}
	}
	for field, d := range map[string]duration.Duration{
		"jwks_refresh": o.JWKSRefresh, "jwks_min_refresh_interval": o.JWKSMinRefreshInterval,
		"jwks_timeout": o.JWKSTimeout, "leeway": o.Leeway,
	} {
		if d < 0 {
			add(field, "must not be negative")
		}
	}
	for field, claim := range map[string]string{
		"tenant_claim": o.TenantClaim, "subject_claim": o.SubjectClaim, "scope_claim": o.ScopeClaim,
	} {
		if claim != "" && strings.TrimSpace(claim) != claim {
			add(field, "must not have surrounding spaces")
		}
	}
	if o.MaxTokenBytes < 0 {
		add("max_token_bytes", "must not be negative")
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}

// checkJWKSURL insists on TLS because whoever can alter the key set can mint
// tokens; plain http is tolerated only to a loopback sidecar.
func checkJWKSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL: %w", err)
	}
	if u.Host == "" {
		return errors.New("must be an absolute URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return errors.New("must use https (http is allowed only to a loopback host)")
	default:
		return fmt.Errorf("unsupported scheme %q", u.Scheme)
	}
}

// AuthError is every failure of Authenticate. Reason is for the log only:
// it never holds token or key contents, and callers must not show it.
type AuthError struct {
	// Reason says why, in a fixed vocabulary.
	Reason string
	// Missing is set when the request carried no credential this gateway
	// accepts (RFC 6750 §3.1: such a challenge carries no error code).
	Missing bool
	// Issuer is the configured issuer the credential claimed, or "apikey";
	// empty when unknown.
	Issuer string
}

func (e *AuthError) Error() string { return "authentication failed: " + e.Reason }

// failure is a reason reported in AuthError.Reason. Being constants of one
// type, reasons raised inside the jwt key callback can be told apart from
// the library's own errors with errors.As.
type failure string

func (f failure) Error() string { return string(f) }

const (
	errNoCredential   failure = "no credential"
	errUnsupported    failure = "unsupported authorization scheme"
	errAmbiguous      failure = "more than one credential"
	errEmpty          failure = "empty credential"
	errBearerDisabled failure = "bearer tokens are not enabled"
	errAPIKeyDisabled failure = "api keys are not enabled"
	errUnknownAPIKey  failure = "unknown api key"
	errTooLarge       failure = "token exceeds the size limit"
	errMalformed      failure = "malformed token"
	errNoSignature    failure = "token has no signature"
	errNoIssuer       failure = "token has no issuer"
	errUnknownIssuer  failure = "unknown issuer"
	errHeaderKey      failure = "token header carries key material (jwk, jku, x5u or x5c)"
	errCrit           failure = "token header has critical extensions"
	errAlgNone        failure = "unsigned token"
	errBadKid         failure = "malformed kid"
	errNoKey          failure = "no trusted key matches the token"
	errBadSignature   failure = "invalid signature or algorithm not allowed"
	errExpired        failure = "token expired"
	errNotYetValid    failure = "token not valid yet"
	errIssuedInFuture failure = "token issued in the future"
	errAudience       failure = "audience not accepted"
	errIssuerMismatch failure = "issuer mismatch"
	errClaimMissing   failure = "required claim missing (exp, aud or iss)"
	errUnverifiable   failure = "token cannot be verified (unknown algorithm)"
	errInvalidClaims  failure = "invalid claims"
	errTenant         failure = "missing or invalid tenant claim"
	errSubject        failure = "missing or invalid subject claim"
	errScopes         failure = "malformed scope claim"
	errInvalidToken   failure = "invalid token"
)

// Authenticator maps requests to principals. It is safe for concurrent use.
type Authenticator struct {
	verified      *verifiedTokens
	now           func() time.Time
	realm         string
	issuers       map[string]*issuerVerifier // by exact "iss"
	maxTokenBytes int
	apiKeys       *apiKeyTable
	remotes       []*remoteKeySet
	cancel        context.CancelFunc
	closeOnce     sync.Once
}

// NewAuthenticator validates o, reads secrets from the environment and key
// files from disk, and fetches every JWKS once, waiting at most until ctx
// ends or the fetch times out. ctx bounds start-up only, so a start-up
// deadline cannot silently end key refreshes; Close stops them. A nil client
// means a default http.Client; a nil log discards.
func NewAuthenticator(ctx context.Context, o Options, client *http.Client, log *slog.Logger) (*Authenticator, error) {
	return newAuthenticator(ctx, o, client, log, time.Now)
}

func newAuthenticator(ctx context.Context, o Options, client *http.Client, log *slog.Logger, now func() time.Time) (*Authenticator, error) {
	if err := Validate(&o); err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	apiKeys, err := newAPIKeyTable(o.APIKeys, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a := &Authenticator{
		verified: newVerifiedTokens(),
		now:      now,
		realm:    cmp.Or(o.Realm, DefaultRealm),
		issuers:  make(map[string]*issuerVerifier, len(o.Issuers)),
		apiKeys:  apiKeys,
		cancel:   cancel,
	}
	for i, opt := range o.Issuers {
		v, err := newIssuerVerifier(fmt.Sprintf("auth.issuers[%d]", i), opt, now, os.LookupEnv)
		if err != nil {
			cancel()
			return nil, err
		}
		if opt.JWKSURL != "" {
			v.remote = newRemoteKeySet(bg, opt, client, log, now)
			a.remotes = append(a.remotes, v.remote)
		}
		a.issuers[opt.Issuer] = v
		a.maxTokenBytes = max(a.maxTokenBytes, v.maxTokenBytes)
	}
	var wg sync.WaitGroup
	for _, r := range a.remotes {
		wg.Go(func() { r.start(ctx) })
	}
	wg.Wait()
	return a, nil
}

func newRemoteKeySet(ctx context.Context, o IssuerOptions, client *http.Client, log *slog.Logger, now func() time.Time) *remoteKeySet {
	logURL := o.JWKSURL
	if u, err := url.Parse(o.JWKSURL); err == nil {
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		logURL = u.String()
	}
	return &remoteKeySet{
		url:         o.JWKSURL,
		logURL:      logURL,
		client:      client,
		timeout:     o.JWKSTimeout.Or(DefaultJWKSTimeout),
		every:       o.JWKSRefresh.Or(DefaultJWKSRefresh),
		minInterval: o.JWKSMinRefreshInterval.Or(DefaultJWKSMinRefreshInterval),
		log:         log.With("issuer", o.Name),
		now:         now,
		ctx:         ctx,
	}
}

// Close stops background JWKS refreshes and waits for them. Cached keys stay
// usable.
func (a *Authenticator) Close() {
	a.closeOnce.Do(func() {
		a.cancel()
		for _, r := range a.remotes {
			r.stop()
		}
	})
}

// Challenge returns the WWW-Authenticate value for a failed Authenticate.
// It never includes the failure reason.
func (a *Authenticator) Challenge(err error) string {
	v := `Bearer realm="` + a.realm + `"`
	var ae *AuthError
	if errors.As(err, &ae) && !ae.Missing {
		v += `, error="invalid_token"`
	}
	return v
}

// Authenticate reads "Authorization: Bearer <jwt>", "Authorization: ApiKey
// <key>" or "X-API-Key: <key>". Requests with more than one credential are
// refused rather than guessing which one counts. Errors are always
// *AuthError.
func (a *Authenticator) Authenticate(r *http.Request) (*request.Principal, error) {
	bearer, apiKey, err := credential(r.Header)
	if err != nil {
		return nil, err
	}
	if apiKey != "" {
		if a.apiKeys == nil || len(a.apiKeys.entries) == 0 {
			return nil, &AuthError{Reason: string(errAPIKeyDisabled)}
		}
		p, ok := a.apiKeys.lookup(apiKey)
		if !ok {
			return nil, &AuthError{Reason: string(errUnknownAPIKey), Issuer: APIKeyIssuer}
		}
		return p, nil
	}
	if len(a.issuers) == 0 {
		return nil, &AuthError{Reason: string(errBearerDisabled)}
	}
	return a.verifyToken(r.Context(), bearer)
}

// CredentialTooLarge reports whether h carries a credential longer than
// any this authenticator accepts, one it would refuse without reading it.
func (a *Authenticator) CredentialTooLarge(h http.Header) bool {
	bearer, apiKey, err := credential(h)
	return err == nil && (len(bearer) > a.maxTokenBytes || len(apiKey) > maxAPIKeyBytes)
}

// credential returns exactly one of a bearer token or an API key.
func credential(h http.Header) (bearer, apiKey string, err error) {
	auth, keys := h.Values("Authorization"), h.Values("X-API-Key")
	switch {
	case len(auth)+len(keys) == 0:
		return "", "", &AuthError{Reason: string(errNoCredential), Missing: true}
	case len(auth)+len(keys) > 1:
		return "", "", &AuthError{Reason: string(errAmbiguous)}
	case len(keys) == 1:
		if k := strings.TrimSpace(keys[0]); k != "" {
			return "", k, nil
		}
		return "", "", &AuthError{Reason: string(errEmpty)}
	}
	scheme, value, _ := strings.Cut(strings.TrimSpace(auth[0]), " ")
	value = strings.TrimSpace(value)
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		bearer = value
	case strings.EqualFold(scheme, "ApiKey"):
		apiKey = value
	default:
		return "", "", &AuthError{Reason: string(errUnsupported), Missing: true}
	}
	if value == "" {
		return "", "", &AuthError{Reason: string(errEmpty)}
	}
	return bearer, apiKey, nil
}

func (a *Authenticator) verifyToken(ctx context.Context, raw string) (*request.Principal, error) {
	if len(raw) > a.maxTokenBytes {
		return nil, &AuthError{Reason: string(errTooLarge)}
	}
	// A token in the cache passed every check below with the issuer it
	// names, whose rules do not change while the process runs: reading its
	// payload again would only cost a decode per request.
	key := sha256.Sum256([]byte(raw))
	now := a.now()
	if p, ok := a.verified.get(key, now); ok {
		return p, nil
	}
	iss, fail := unverifiedIssuer(raw)
	if fail != "" {
		return nil, &AuthError{Reason: string(fail)}
	}
	v, ok := a.issuers[iss]
	if !ok {
		return nil, &AuthError{Reason: string(errUnknownIssuer)}
	}
	if len(raw) > v.maxTokenBytes {
		return nil, &AuthError{Reason: string(errTooLarge), Issuer: v.name}
	}
	claims := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(raw, claims, v.keyfunc(ctx)); err != nil {
		return nil, &AuthError{Reason: string(tokenFailure(err)), Issuer: v.name}
	}
	p, fail := v.principal(claims)
	if fail != "" {
		return nil, &AuthError{Reason: string(fail), Issuer: v.name}
	}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		a.verified.put(key, p, exp.Time, now)
	}
	return p, nil
}

// unverifiedIssuer reads "iss" to choose the issuer whose rules then verify
// everything, "iss" included. Nothing else of the unverified payload is used.
func unverifiedIssuer(raw string) (string, failure) {
	if strings.Count(raw, ".") != 2 {
		return "", errMalformed
	}
	header, rest, _ := strings.Cut(raw, ".")
	payload, sig, _ := strings.Cut(rest, ".")
	if header == "" || payload == "" {
		return "", errMalformed
	}
	if sig == "" {
		return "", errNoSignature
	}
	data, err := base64.RawURLEncoding.Strict().DecodeString(payload)
	if err != nil {
		return "", errMalformed
	}
	var claims map[string]json.RawMessage
	if err := json.Unmarshal(data, &claims); err != nil {
		return "", errMalformed
	}
	rawIss, ok := claims["iss"]
	if !ok {
		return "", errNoIssuer
	}
	var iss string
	if err := json.Unmarshal(rawIss, &iss); err != nil {
		return "", errMalformed
	}
	if iss == "" {
		return "", errNoIssuer
	}
	return iss, ""
}

// tokenFailure maps a jwt error to a fixed reason, so no part of the token
// reaches a log through the library's messages.
func tokenFailure(err error) failure {
	if own, ok := errors.AsType[failure](err); ok {
		return own
	}
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return errMalformed
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return errBadSignature
	case errors.Is(err, jwt.ErrTokenExpired):
		return errExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return errNotYetValid
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return errIssuedInFuture
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return errAudience
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return errIssuerMismatch
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return errClaimMissing
	case errors.Is(err, jwt.ErrTokenInvalidClaims):
		return errInvalidClaims
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return errUnverifiable
	default:
		return errInvalidToken
	}
}

// issuerVerifier holds one issuer's rules and keys.
type issuerVerifier struct {
	name          string
	parser        *jwt.Parser
	static        *keySet
	remote        *remoteKeySet // nil without jwks_url
	secret        []byte        // nil without an HS algorithm
	maxTokenBytes int
	tenantClaim   string
	subjectClaim  string
	scopeClaim    string
}

// LookupEnv reads an environment variable: os.LookupEnv, or nil where the
// secrets held in variables are not at hand and are not checked.
type LookupEnv func(name string) (string, bool)

// CheckMaterial reads what NewAuthenticator would read from files and, with
// env, from the environment (key files, HMAC secrets, API keys), and
// reports every problem at once. It fetches no JWKS.
func CheckMaterial(o *Options, env LookupEnv) error {
	var errs []error
	for i, opt := range o.Issuers {
		if _, err := newIssuerVerifier(fmt.Sprintf("auth.issuers[%d]", i), opt, time.Now, env); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := newAPIKeyTable(o.APIKeys, env); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// newIssuerVerifier loads the issuer's keys; with a nil env its HMAC secret
// is left unread.
func newIssuerVerifier(path string, o IssuerOptions, now func() time.Time, env LookupEnv) (*issuerVerifier, error) {
	v := &issuerVerifier{
		name: o.Name,
		parser: jwt.NewParser(
			jwt.WithValidMethods(slices.Clone(o.Algorithms)),
			jwt.WithIssuer(o.Issuer),
			jwt.WithAudience(slices.Clone(o.Audiences)...),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(o.Leeway.Or(DefaultLeeway)),
			jwt.WithTimeFunc(now),
			jwt.WithStrictDecoding(),
		),
		maxTokenBytes: o.MaxTokenBytes,
		tenantClaim:   cmp.Or(o.TenantClaim, DefaultTenantClaim),
		subjectClaim:  cmp.Or(o.SubjectClaim, DefaultSubjectClaim),
		scopeClaim:    cmp.Or(o.ScopeClaim, DefaultScopeClaim),
	}
	if v.maxTokenBytes == 0 {
		v.maxTokenBytes = config.DefaultMaxTokenBytes
	}
	var keys []*verifyKey
	var errs []error
files:
	for i, file := range o.KeyFiles {
		field := fmt.Sprintf("%s.key_files[%d]", path, i)
		loaded, err := loadKeyFile(file)
		if err != nil {
			errs = append(errs, fieldError(field, "%s: %w", file, err))
			continue
		}
		for _, k := range loaded {
			if !slices.ContainsFunc(o.Algorithms, k.usableFor) {
				errs = append(errs, fieldError(field, "%s: %s key (kid %q) fits none of the pinned algorithms", file, describeKey(k.key), k.kid))
				continue files
			}
		}
		keys = append(keys, loaded...)
	}
	if len(keys) > 0 {
		v.static = newKeySet(keys)
	}
	if o.HMACSecretEnv != "" && env != nil {
		secret, err := hmacSecret(path+".hmac_secret_env", o, env)
		if err != nil {
			errs = append(errs, err)
		}
		v.secret = secret
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return v, nil
}
