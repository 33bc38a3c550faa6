package config

import "os"

// Env reads the environment variables a configuration names (the *_env
// fields). Validation takes it as an argument so that `check --skip-env` can
// lint a file where the secrets are absent: a nil Env skips every check of
// a variable's presence and content, and nothing else.
type Env func(name string) (string, bool)

// ProcessEnv is the process's environment, what `serve` reads.
var ProcessEnv Env = os.LookupEnv

// checkVar reports the problem with the variable name, or "" when it is set
// (or env is nil). The value never goes into the message: it is a secret.
func (env Env) checkVar(name string) string {
	if env == nil || name == "" {
		return ""
	}
	if v, ok := env(name); !ok || v == "" {
		return "environment variable " + name + " is not set or empty"
	}
	return ""
}
