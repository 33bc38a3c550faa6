package proc

import (
	"os/exec"
	"syscall"
)

// isolate asks the kernel to kill the child if the test binary dies without
// stopping it (a panic, a test timeout, a signal).
func isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
