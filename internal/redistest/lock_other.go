//go:build !unix

package redistest

import "errors"

// lockFile is only needed to run apt-get, which only unix systems have.
func lockFile(string) (func(), error) {
	return nil, errors.New("installing redis-server needs a unix system")
}
