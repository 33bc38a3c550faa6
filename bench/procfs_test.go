package bench

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestCPUTime(t *testing.T) {
	before, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the tick count moves, bounded so a broken reading
	// cannot hang the test.
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
		after, err := cpuTime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after < before {
			t.Fatalf("CPU time went back from %v to %v", before, after)
		}
		if after > before {
			return
		}
	}
	t.Fatalf("CPU time stayed at %v while this test burned CPU (%d)", before, x)
}

func TestCPUTimeOfMissingProcess(t *testing.T) {
	if _, err := cpuTime(-1); err == nil {
		t.Fatal("no error for a process that cannot exist")
	}
}

func TestSchedTimes(t *testing.T) {
	// The burn stays on this thread, which lives through the test: the
	// sum over the process's threads loses what a thread that exits had
	// run, so only a thread known to stay can show the reading move.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := readSchedTimes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before.run <= 0 || before.wait < 0 {
		t.Fatalf("scheduler times %+v of a running process", before)
	}
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
		after, err := readSchedTimes(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after.run > before.run && after.wait >= 0 {
			if _, err := readSchedTimes(-1); err == nil {
				t.Fatal("no error for a process that cannot exist")
			}
			return
		}
	}
	t.Fatalf("scheduler run time stayed at %v while this test burned CPU (%d)", before.run, x)
}
