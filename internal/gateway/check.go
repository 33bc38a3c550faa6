package gateway

import (
	"errors"
	"fmt"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	cardserve "github.com/a2a-gateway/a2a-gateway/proxy/card/serve"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// Check reads everything New reads from files and from the environment
// that configuration validation does not (verification and signing keys,
// API keys, HMAC secrets) and reports every problem at once. It connects to nothing: a Redis that is
// down or a JWKS that cannot be fetched is found only by serve. With a nil
// env the secrets held in environment variables are not read.
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
	add(cfg.Auth.CheckMaterial(authz.LookupEnv(env)))
	if _, _, err := cardserve.LoadSigner(cfg.CardSigning); err != nil {
		add(err)
	}
	if cfg.Push.Enabled {
		if _, err := push.NewSigner(cfg.Push.SignerOptions()); err != nil {
			add(fmt.Errorf("push.%w", err))
		}
	}
	return errors.Join(errs...)
}
