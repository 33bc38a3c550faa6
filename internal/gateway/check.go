package gateway

import (
	"errors"
	"fmt"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	cardserve "github.com/a2a-gateway/a2a-gateway/proxy/card/serve"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// Validate checks what of the configuration only the packages that use it
// can check, past what config's own validation checks: the auth section
// against the supported algorithms, each agent's policy against the
// operations, and the push section's signing options, allowlists, webhook
// secrets and bounds. Like config's, its errors read "field.path: reason",
// so that Config.Locate gives them their lines. With a nil env the secrets
// held in environment variables are not read.
func Validate(cfg *config.Config, env config.Env) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(authz.Validate(&cfg.Auth))
	for i := range cfg.Agents {
		p := &cfg.Agents[i].Policy
		// A policy's first problem is reported alone: one whose ownership
		// the configuration refused is not looked at further.
		if p.Validate("") == nil {
			add(authz.ValidatePolicy(p, fmt.Sprintf("agents[%d].policy", i)))
		}
	}
	add(push.ValidateConfig(&cfg.Push, env))
	return errors.Join(errs...)
}

// Check reports every problem with cfg that New would refuse, before New
// touches the network: Validate's, then what New reads from files and from
// the environment that validation does not (verification and signing keys,
// API keys, HMAC secrets). It connects to nothing: a Redis that is down or
// a JWKS that cannot be fetched is found only by serve. With a nil env the
// secrets held in environment variables are not read.
//
// New runs it first, so that `check` refuses whatever serve would refuse
// before it touches the network.
func Check(cfg *config.Config, env config.Env) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(Validate(cfg, env))
	add(authz.CheckMaterial(&cfg.Auth, authz.LookupEnv(env)))
	if _, _, err := cardserve.LoadSigner(cfg.CardSigning); err != nil {
		add(err)
	}
	add(checkGRPCTLS(cfg))
	if cfg.Push.Enabled {
		if _, err := push.NewSigner(push.SignerOptionsOf(&cfg.Push)); err != nil {
			add(fmt.Errorf("push.%w", err))
		}
	}
	return errors.Join(errs...)
}
