//go:build !unix

package proc

import "os"

// terminate has no clean-exit signal here: the process is killed.
func terminate(p *os.Process) error { return p.Kill() }
