//go:build unix

package proc

import (
	"os"
	"syscall"
)

// terminate asks the process to exit cleanly.
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
