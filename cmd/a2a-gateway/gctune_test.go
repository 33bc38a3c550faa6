package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		live, floor uint64
		want        int
	}{
		{8 * mib, 64 * mib, 700},   // goal 8 MiB * 8 = 64 MiB
		{2 * mib, 64 * mib, 1500},  // the runtime's 4 MiB minimum heap, scaled to the floor
		{32 * mib, 64 * mib, 100},  // the default's goal reaches the floor
		{500 * mib, 64 * mib, 100}, // many streams: the default, not more memory
		{0, 64 * mib, 1500},        // before the first collection
		{0, 1 << 40, 10000},        // kept in the runtime's range
	}
	for _, tt := range tests {
		if got := gcPercentFor(tt.live, tt.floor); got != tt.want {
			t.Errorf("gcPercentFor(%d, %d) = %d, want %d", tt.live, tt.floor, got, tt.want)
		}
	}
}

func TestGCFloorSetting(t *testing.T) {
	for in, want := range map[string]uint64{"": defaultGCFloor, "0": 0, "1048576": 1 << 20, "64MiB": 64 << 20, "512KiB": 512 << 10, "1GiB": 1 << 30} {
		if got, err := gcFloor(in); err != nil || got != want {
			t.Errorf("gcFloor(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"64MB", "-1", "MiB", "1.5GiB", "99999999999GiB"} {
		if _, err := gcFloor(in); err == nil {
			t.Errorf("gcFloor(%q) accepted", in)
		}
	}
}

// gogc is the runtime's GC percentage now.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

	if err := tuneGC(env(map[string]string{gcFloorEnv: "64 MiB"})); err == nil {
		t.Fatal("a malformed floor was accepted")
	}
	// The operator's GOGC, or a floor of 0, leaves the runtime alone.
	for _, vars := range []map[string]string{{"GOGC": "100", gcFloorEnv: "1GiB"}, {gcFloorEnv: "0"}} {
		if err := tuneGC(env(vars)); err != nil || gogc() != 100 {
			t.Fatalf("%v: GOGC %d, %v; want 100 untouched", vars, gogc(), err)
		}
	}
	// A floor far above this test's heap raises GOGC at once, and again
	// after the collections that follow, which the tuner watches without
	// being called: set it back and let the collector run.
	if err := tuneGC(env(map[string]string{gcFloorEnv: "1GiB"})); err != nil || gogc() <= 100 {
		t.Fatalf("GOGC %d, %v; want it raised for the floor", gogc(), err)
	}
	debug.SetGCPercent(100)
	for range 1000 {
		runtime.GC()
		runtime.Gosched()
		if gogc() > 100 {
			return
		}
	}
	t.Fatal("no collection ran the tuner again")
}
