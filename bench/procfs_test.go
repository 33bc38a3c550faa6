package bench

import (
	"os"
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
	before, err := readSchedTimes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 10_000_000 {
		x += i
	}
	after, err := readSchedTimes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after.minus(before); d.run <= 0 || d.wait < 0 {
		t.Fatalf("scheduler times moved by %+v while this test burned CPU (%d)", d, x)
	}
	if _, err := readSchedTimes(-1); err == nil {
		t.Fatal("no error for a process that cannot exist")
	}
}
