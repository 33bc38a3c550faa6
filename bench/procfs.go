package bench

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// rssKiB reads a process's resident set size (VmRSS) from /proc.
func rssKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read RSS: %w", err)
	}
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("read RSS: unexpected VmRSS line %q", bytes.TrimSpace(line))
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read RSS: %w", err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("read RSS: no VmRSS line for pid %d", pid)
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, which
// the kernel's user-space interface fixes at 100 on every architecture Go
// supports on Linux.
const userHZ = 100

// cpuTime reads the user plus system CPU time a process has used so far,
// all its threads together, from /proc/<pid>/stat.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read CPU time: %w", err)
	}
	// The command name in parentheses may hold spaces and parentheses;
	// the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("read CPU time: malformed stat for pid %d", pid)
	}
	// Fields 14 (utime) and 15 (stime) of proc(5), counted from the state,
	// which is field 3.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("read CPU time: short stat for pid %d", pid)
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("read CPU time: pid %d: bad tick count %q", pid, s)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// Machine describes where the numbers were taken.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	GoVersion string `json:"go_version"`
	Kernel    string `json:"kernel"`
	OS        string `json:"os"`
	Nginx     string `json:"nginx,omitempty"`
	Redis     string `json:"redis,omitempty"`
}

func machineInfo() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range bytes.Lines(b) {
			if k, v, ok := strings.Cut(string(line), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// raiseFileLimit lifts the soft limit on open files to the hard limit and
// returns the new soft limit. The children inherit it: thousands of
// streams hold two sockets each in the gateway. Go raises its own soft
// limit at start-up but hands children the original one unless the
// program calls Setrlimit itself, so the call is made even when the limit
// already looks raised.
func raiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("getrlimit: %w", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("setrlimit: %w", err)
	}
	return lim.Cur, nil
}

// schedTimes are what the scheduler counted for a process's threads, from
// /proc/<pid>/task/*/schedstat: time on a CPU, and time runnable but
// waiting for one, which on a shared machine is latency no code can
// remove. A thread that ends takes its counts with it; the Go runtime
// keeps its threads.
type schedTimes struct{ run, wait time.Duration }

func (s schedTimes) minus(o schedTimes) schedTimes {
	return schedTimes{run: s.run - o.run, wait: s.wait - o.wait}
}

func readSchedTimes(pid int) (schedTimes, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return schedTimes{}, fmt.Errorf("read scheduler times: %w", err)
	}
	var st schedTimes
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended after the listing
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			return schedTimes{}, fmt.Errorf("read scheduler times: short schedstat for thread %s of pid %d", t.Name(), pid)
		}
		run, err1 := strconv.ParseInt(f[0], 10, 64)
		wait, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return schedTimes{}, fmt.Errorf("read scheduler times: bad schedstat %q for thread %s of pid %d", b, t.Name(), pid)
		}
		st.run += time.Duration(run)
		st.wait += time.Duration(wait)
	}
	return st, nil
}
