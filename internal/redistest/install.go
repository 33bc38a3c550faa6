package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// installTimeout bounds apt-get; a slow mirror must not hang a test run forever.
const installTimeout = 5 * time.Minute

// lookupRedis finds redis-server, installing Debian's package when the tests
// run as root on a machine with apt-get (a fresh CI machine, for example).
func lookupRedis(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	if err := installRedis(); err != nil {
		t.Fatalf("redistest: redis-server is not on PATH and could not be installed: %v; "+
			"install Debian's redis-server package (apt-get install redis-server) or put redis-server on PATH", err)
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: apt-get installed redis-server but it is not on PATH: %v", err)
	}
	return p
}

func installRedis() error {
	if os.Geteuid() != 0 {
		return errors.New("not running as root, so apt-get cannot be used")
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil {
		return fmt.Errorf("no apt-get: %w", err)
	}
	// Several test binaries may start at once; one installs, the others wait.
	unlock, err := lockFile(filepath.Join(os.TempDir(), "redistest-install.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := exec.LookPath("redis-server"); err == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	for _, args := range [][]string{
		{"update"},
		{"install", "-y", "--no-install-recommends", "redis-server"},
	} {
		cmd := exec.CommandContext(ctx, apt, args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", args[0], err, lastBytes(out, 4<<10))
		}
	}
	return nil
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
