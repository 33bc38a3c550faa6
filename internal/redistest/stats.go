package redistest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ServerCPU is the server's CPU time so far, user and system (INFO cpu),
// which includes reading requests and writing replies.
func ServerCPU(tb testing.TB, c *redis.Client) time.Duration {
	tb.Helper()
	var sec float64
	for name, v := range info(tb, c, "cpu") {
		if name == "used_cpu_sys" || name == "used_cpu_user" {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("INFO cpu %s: %v", name, err)
			}
			sec += n
		}
	}
	return time.Duration(sec * float64(time.Second))
}

// CommandStat is one command's line of INFO commandstats: its calls and
// the µs spent in them (a script's include the commands it runs, which
// have lines of their own).
type CommandStat struct {
	Name        string
	Calls, Usec float64
}

// CommandStats reads INFO commandstats, costliest first, leaving out the
// commands a measurement makes itself (INFO, CONFIG RESETSTAT, HELLO).
func CommandStats(tb testing.TB, c *redis.Client) []CommandStat {
	tb.Helper()
	var out []CommandStat
	for name, fields := range info(tb, c, "commandstats") {
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !found || name == "info" || name == "config|resetstat" || name == "hello" {
			continue
		}
		st := CommandStat{Name: name}
		for f := range strings.SplitSeq(fields, ",") {
			key, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseFloat(v, 64)
			switch key {
			case "calls":
				st.Calls = n
			case "usec":
				st.Usec = n
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b CommandStat) int {
		return cmp.Or(cmp.Compare(b.Usec, a.Usec), strings.Compare(a.Name, b.Name))
	})
	return out
}

// PerUnit renders stats as calls and µs per unit of work, for a log line.
func PerUnit(stats []CommandStat, units float64) string {
	var b strings.Builder
	for _, st := range stats {
		fmt.Fprintf(&b, " %s %.2f calls %.2f µs;", st.Name, st.Calls/units, st.Usec/units)
	}
	return b.String()
}

// info reads an INFO section's key:value lines.
func info(tb testing.TB, c *redis.Client, section string) map[string]string {
	tb.Helper()
	fields, err := infoFields(context.Background(), c, "INFO", section)
	if err != nil {
		tb.Fatalf("INFO %s: %v", section, err)
	}
	return fields
}
