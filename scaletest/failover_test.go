package scaletest

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// replicationWindow is how long before a Redis master's death a write it
// acknowledged may be missing from the replica that replaces it:
// replication is asynchronous. Generous: on loopback the lag is far below.
const replicationWindow = time.Second

// Three gateway processes on a six-node Redis Cluster (three masters, three
// replicas) with requests spread over them. Mid-run one gateway and one
// Redis master are killed with SIGKILL; the cluster fails over, and the
// tenant matrix, dedupe and the load's own checks hold before, during and
// after.
func TestReplicasSurviveGatewayAndRedisMasterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a six-node Redis Cluster and three gateway processes")
	}
	setupStart := time.Now()
	cluster := redistest.StartCluster(t, 3, 1)
	w := newWorld(t, 3, store.RedisOptions{Addrs: cluster.Addrs()}, withPushRelay(t))
	rcv := newReceiver(t)
	acme, globex := w.caller(t, "acme", "alice"), w.caller(t, "globex", "bob")
	t.Logf("set-up: 6 Redis nodes and 3 gateway processes in %s", time.Since(setupStart).Round(time.Millisecond))

	// Before: every check on a healthy deployment.
	victims := w.createVictims(t, acme)
	w.checkIsolation(t, globex, victims)
	w.checkIsolation(t, acme, w.createVictims(t, globex))
	early := []dedupeCase{w.checkDedupeRetries(t, acme), w.checkDedupeRetries(t, globex)}
	w.checkConcurrentRetries(t, acme)
	if t.Failed() {
		t.FailNow()
	}

	// During: load on every replica; kill a gateway, then a Redis master.
	l := startLoad(w, acme, globex, 4, rcv)
	time.Sleep(2 * time.Second)
	killed := w.gateways[1]
	gwKill := time.Now()
	killed.kill(t)
	time.Sleep(time.Second)
	redisKill := time.Now()
	cluster.KillMaster(t, 0)
	cluster.WaitHealthy(t, 60*time.Second)
	failedOver := time.Now()
	time.Sleep(3 * time.Second)
	l.stopAndWait()
	loadEnd := time.Now()

	// After: every live replica serves again, and every check passes on
	// the tasks and messages of before and on new ones.
	settled := w.settle(t, victims[0])
	w.checkIsolation(t, globex, append(victims, w.createVictims(t, acme)...))
	for _, d := range early {
		w.checkReplay(t, d, nil)
	}
	w.checkDedupeRetries(t, acme)
	w.checkConcurrentRetries(t, globex)

	// The outage as the gateways saw it: until cluster_state:ok everywhere,
	// or until the load's last request the store failed, when a gateway's
	// client learnt the new topology later than that.
	outageEnd := failedOver
	if last := l.lastFailure(); last.After(outageEnd) {
		outageEnd = last
	}
	dup := w.verifyLoad(t, l, redisKill, outageEnd)
	pushed := w.verifyPush(t, l, rcv, redisKill.Add(-replicationWindow), outageEnd)
	for _, leak := range l.leaks {
		t.Errorf("LEAK during the run: %s", leak)
	}
	t.Logf("load: %d requests by 4 clients over %s, %d messages sent, spread round-robin over 3 replicas",
		l.requests, loadEnd.Sub(gwKill.Add(-2*time.Second)).Round(time.Millisecond), len(l.messages))
	t.Logf("killed gateway %s at t=0 and the Redis master of slots 0-5460 at t=%s", killed.name, redisKill.Sub(gwKill).Round(time.Millisecond))
	t.Logf("cluster failover (Redis master SIGKILL to cluster_state:ok everywhere): %s", failedOver.Sub(redisKill).Round(time.Millisecond))
	t.Logf("requests not answered as they should have been: %s", l.failureSummary(gwKill))
	t.Logf("every live replica served again %s after the Redis kill", settled.Sub(redisKill).Round(time.Millisecond))
	t.Logf("dedupe: %s; expired-lease takeovers counted by the live replicas: %d", dup, w.takeovers(t))
	t.Logf("cross-tenant reads during the run: %d leaked", len(l.leaks))
	t.Logf("push relay: %s", pushed)
}

// settle waits until every live replica answers the owner's GetTask of v,
// and returns when they all did.
func (w *world) settle(t *testing.T, v task) time.Time {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, g := range w.live() {
		for {
			r := w.call(g, v.owner, a2a.MethodGetTask, map[string]any{"id": v.id})
			if r.ok() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still answers %s a minute after the failover", g.name, r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return time.Now()
}

// verifyLoad checks every message of the load: each got a task, reached
// the agent once, and a retry through another replica replayed that task;
// except that a message may reach the agent again (and a retry get a
// second task) inside dedupe's documented window: a try was lost with its
// replica (the holder died after forwarding, and the retry took the claim
// over once its lease ran out), or the message was tried while its Redis
// master was dying or failing over, until outageEnd, when the gateways
// reached the store again (replication is asynchronous, so the claim or
// the answer may not have reached the replica that took over, and an answer
// that cannot be recorded is withheld with its claim held for a lease:
// docs/dedupe.md's 1 + ⌈outage / lease⌉). It returns a summary.
func (w *world) verifyLoad(t *testing.T, l *load, redisKill, outageEnd time.Time) string {
	t.Helper()
	reached := map[string]int{}
	for _, r := range w.agent.Requests() {
		if r.Op.MessageID != "" {
			reached[r.Op.MessageID]++
		}
	}
	retried, dupLost, dupFailover := 0, 0, 0
	for _, m := range l.messages {
		if m.taskID == "" {
			t.Errorf("message %s never succeeded in %s: %d tries, last %s", m.id, giveUpAfter, len(m.attempts), m.attempts[len(m.attempts)-1].r)
			continue
		}
		if len(m.attempts) > 1 {
			retried++
		}
		n := reached[m.id]
		dupTask := m.retryTaskID != "" && m.retryTaskID != m.taskID
		if n == 1 && !dupTask {
			continue
		}
		first := m.attempts[0].start
		inFailover := !first.Before(redisKill.Add(-replicationWindow)) && first.Before(outageEnd)
		// While the failed master's slots are down, an answer whose
		// ownership cannot be recorded is withheld and its claim held for
		// one lease; a retry after the lease reaches the agent again. So a
		// message first sent in the failover may reach it once more per
		// lease the failover lasted (the dedupe limits in docs/dedupe.md).
		limit := 2
		if inFailover || m.triedDuring(redisKill.Add(-replicationWindow), outageEnd) {
			limit = 2 + int((outageEnd.Sub(redisKill)+dedupeLease-1)/dedupeLease)
		}
		switch {
		case n < 1:
			t.Errorf("message %s answered with task %s never reached the agent", m.id, m.taskID)
		case n > limit:
			t.Errorf("message %s reached the agent %d times; tries: %s retries: %s", m.id, n, describe(m.attempts, redisKill), describe(m.retries, redisKill))
		case m.lostAttempt():
			dupLost++
		case inFailover:
			dupFailover++
		default:
			t.Errorf("message %s reached the agent %d times (tasks %s, %s) outside dedupe's window; tries: %s retries: %s", m.id, n, m.taskID, m.retryTaskID, describe(m.attempts, redisKill), describe(m.retries, redisKill))
		}
	}
	return "messages retried after a failure: " + strconv.Itoa(retried) +
		"; reached the agent more than once: " + strconv.Itoa(dupLost+dupFailover) +
		" (" + strconv.Itoa(dupLost) + " after a try lost with a killed replica, " + strconv.Itoa(dupFailover) + " sent during the Redis failover), none outside the window"
}

// triedDuring reports whether a try of the message started in [from, to).
func (m *message) triedDuring(from, to time.Time) bool {
	for _, a := range m.attempts {
		if !a.start.Before(from) && a.start.Before(to) {
			return true
		}
	}
	return false
}

func describe(as []attempt, t0 time.Time) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString(a.via + " at " + a.start.Sub(t0).Round(time.Millisecond).String() + ": " + a.r.String() + "; ")
	}
	return b.String()
}

// takeovers sums a2agw_dedupe_total{outcome="expired_takeover"} over the
// live replicas' metrics.
func (w *world) takeovers(t *testing.T) int {
	t.Helper()
	total := 0
	for _, g := range w.live() {
		resp, err := http.Get(g.admin + "/metrics")
		if err != nil {
			t.Fatalf("scrape %s: %v", g.name, err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "a2agw_dedupe_total{") && strings.Contains(line, `outcome="expired_takeover"`) {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				total += int(v)
			}
		}
		resp.Body.Close()
	}
	return total
}
