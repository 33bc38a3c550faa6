package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// clusterSlots is the fixed number of hash slots in Redis Cluster.
	clusterSlots = 16384
	// clusterNodeTimeout (ms) sets how fast a dead master is detected. Short
	// enough for quick failover tests, long enough that a busy machine does
	// not produce spurious failovers.
	clusterNodeTimeout = "3000"
	// setupTimeout bounds creating a cluster, including replica sync.
	setupTimeout = 60 * time.Second
	// pollInterval is how often cluster state is re-checked while waiting.
	pollInterval = 100 * time.Millisecond
)

// Cluster is a Redis Cluster of real redis-server processes on loopback.
// The cluster is built with CLUSTER ADDSLOTS, MEET and REPLICATE rather than
// redis-cli, so the topology is exact (master i serves the i-th slot range,
// its replicas are known) and any master count works, including one.
type Cluster struct {
	masters  int
	replicas int // per master
	nodes    []*Server
	admins   []*redis.Client // one per node, for setup and health checks
	ranges   []slotRange     // ranges[i] is the slot range of the i-th master
}

type slotRange struct{ lo, hi int }

// StartCluster launches masters + masters*replicasPerMaster nodes in cluster
// mode on free ports, assigns the slots evenly to the masters, attaches the
// replicas and waits until every node reports cluster_state:ok and every
// replica is in sync. Cleanup kills every node.
func StartCluster(t testing.TB, masters, replicasPerMaster int) *Cluster {
	t.Helper()
	if masters < 1 || replicasPerMaster < 0 {
		t.Fatalf("redistest: StartCluster(%d, %d): need at least one master and no negative replica count", masters, replicasPerMaster)
	}
	c := &Cluster{masters: masters, replicas: replicasPerMaster}
	for i := range masters {
		c.ranges = append(c.ranges, slotRange{lo: i * clusterSlots / masters, hi: (i+1)*clusterSlots/masters - 1})
	}
	args := []string{
		"--save", "", "--appendonly", "no",
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", clusterNodeTimeout,
		// Let any replica take over however long it was disconnected: tests
		// kill masters on purpose and expect a failover every time.
		"--cluster-replica-validity-factor", "0",
		// Replicas sync at once instead of after the default 5 s batching delay.
		"--repl-diskless-sync-delay", "0",
	}
	for range masters * (1 + replicasPerMaster) {
		s := launch(t, freeClusterPort, args)
		c.nodes = append(c.nodes, s)
		a := redis.NewClient(&redis.Options{
			Addr: s.Addr(), DisableIdentity: true, MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		})
		c.admins = append(c.admins, a)
		t.Cleanup(func() { _ = a.Close() })
	}

	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := c.create(ctx); err != nil {
		t.Fatalf("redistest: create cluster: %v", err)
	}
	if err := c.waitFor(ctx, func(ctx context.Context) error { return c.check(ctx, true) }); err != nil {
		t.Fatalf("redistest: cluster did not become healthy: %v", err)
	}
	return c
}

// create wires the started nodes into a cluster.
func (c *Cluster) create(ctx context.Context) error {
	ids := make([]string, len(c.nodes))
	for i, a := range c.admins {
		id, err := a.ClusterMyID(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER MYID on %s: %w", c.nodes[i].Addr(), err)
		}
		ids[i] = id
		// Distinct epochs before the nodes meet avoid an epoch collision
		// round, as redis-cli --cluster create does.
		if err := a.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("CLUSTER SET-CONFIG-EPOCH on %s: %w", c.nodes[i].Addr(), err)
		}
	}
	for i, r := range c.ranges {
		if err := c.admins[i].ClusterAddSlotsRange(ctx, r.lo, r.hi).Err(); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTS on %s: %w", c.nodes[i].Addr(), err)
		}
	}
	for _, s := range c.nodes[1:] {
		if err := c.admins[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(s.port)).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET %s: %w", s.Addr(), err)
		}
	}
	if err := c.waitFor(ctx, c.allKnown); err != nil {
		return fmt.Errorf("nodes did not meet: %w", err)
	}
	for k := c.masters; k < len(c.nodes); k++ {
		if err := c.admins[k].ClusterReplicate(ctx, ids[c.masterOf(k)]).Err(); err != nil {
			return fmt.Errorf("CLUSTER REPLICATE on %s: %w", c.nodes[k].Addr(), err)
		}
	}
	return nil
}

// masterOf is the index of the master that replica node k was attached to.
func (c *Cluster) masterOf(k int) int { return (k - c.masters) / c.replicas }

// allKnown reports whether every node knows every other over a working bus link.
func (c *Cluster) allKnown(ctx context.Context) error {
	for i, a := range c.admins {
		view, err := clusterNodes(ctx, a)
		if err != nil {
			return fmt.Errorf("%s: %w", c.nodes[i].Addr(), err)
		}
		connected := 0
		for _, n := range view {
			if !n.flags["handshake"] && !n.flags["noaddr"] && n.link == "connected" {
				connected++
			}
		}
		if connected != len(c.nodes) {
			return fmt.Errorf("%s sees %d of %d nodes connected", c.nodes[i].Addr(), connected, len(c.nodes))
		}
	}
	return nil
}

// check returns nil when the cluster is usable: every live node reports
// cluster_state:ok with all slots served, all live nodes agree which live
// node serves each slot range and who replicates whom, and every live
// replica has a synced link to its master. initial additionally requires the
// topology StartCluster built.
func (c *Cluster) check(ctx context.Context, initial bool) error {
	alive := map[int]int{} // port -> node index
	for i, s := range c.nodes {
		if s.Running() {
			alive[s.port] = i
		}
	}
	var ref map[int]nodeInfo // the first live node's view, by port
	var refAddr string
	for i, a := range c.admins {
		s := c.nodes[i]
		if !s.Running() {
			continue
		}
		info, err := infoFields(ctx, a, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("%s: CLUSTER INFO: %w", s.Addr(), err)
		}
		if info["cluster_state"] != "ok" || info["cluster_slots_ok"] != strconv.Itoa(clusterSlots) {
			return fmt.Errorf("%s: cluster_state:%s cluster_slots_ok:%s", s.Addr(), info["cluster_state"], info["cluster_slots_ok"])
		}
		view, err := clusterNodes(ctx, a)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Addr(), err)
		}
		byPort := map[int]nodeInfo{}
		for _, n := range view {
			byPort[n.port] = n
		}
		for ri, r := range c.ranges {
			port, ok := servingMaster(view, r.lo)
			if !ok {
				return fmt.Errorf("%s: no healthy master serves slot %d", s.Addr(), r.lo)
			}
			if _, live := alive[port]; !live {
				return fmt.Errorf("%s: slot range %d is still assigned to dead node :%d", s.Addr(), ri, port)
			}
			if initial && port != c.nodes[ri].port {
				return fmt.Errorf("%s: slot range %d served by :%d, want :%d", s.Addr(), ri, port, c.nodes[ri].port)
			}
		}
		if ref == nil {
			ref, refAddr = byPort, s.Addr()
		} else {
			for port := range alive {
				a, b := ref[port], byPort[port]
				if a.isReplica() != b.isReplica() || a.masterID != b.masterID {
					return fmt.Errorf("%s and %s disagree about the role of :%d", refAddr, s.Addr(), port)
				}
			}
		}
		repl, err := infoFields(ctx, a, "INFO", "replication")
		if err != nil {
			return fmt.Errorf("%s: INFO replication: %w", s.Addr(), err)
		}
		if repl["role"] == "slave" {
			if repl["master_link_status"] != "up" || repl["master_sync_in_progress"] != "0" {
				return fmt.Errorf("%s: replica link %s, sync in progress %s", s.Addr(), repl["master_link_status"], repl["master_sync_in_progress"])
			}
		}
		if initial {
			if err := c.checkInitialRole(i, repl); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Cluster) checkInitialRole(i int, repl map[string]string) error {
	s := c.nodes[i]
	if i < c.masters {
		if repl["role"] != "master" || repl["connected_slaves"] != strconv.Itoa(c.replicas) {
			return fmt.Errorf("%s: role %s with %s replicas, want master with %d", s.Addr(), repl["role"], repl["connected_slaves"], c.replicas)
		}
		return nil
	}
	want := strconv.Itoa(c.nodes[c.masterOf(i)].port)
	if repl["role"] != "slave" || repl["master_port"] != want {
		return fmt.Errorf("%s: role %s of :%s, want replica of :%s", s.Addr(), repl["role"], repl["master_port"], want)
	}
	return nil
}

// waitFor polls cond until it returns nil or ctx ends, and then reports the
// last reason the condition was not met.
func (c *Cluster) waitFor(ctx context.Context, cond func(context.Context) error) error {
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last state: %w", ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}

// Addrs lists every node's address, masters first, then replicas in the
// order of their masters.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		out[i] = s.Addr()
	}
	return out
}

// Client returns a cluster client seeded with every node, closed on cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), DisableIdentity: true})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// KillMaster kills, with SIGKILL, the node currently serving the i-th slot
// range (the i-th master at creation, or the replica that replaced it).
// WaitHealthy then waits for a replica to take over.
func (c *Cluster) KillMaster(t testing.TB, i int) {
	t.Helper()
	if i < 0 || i >= c.masters {
		t.Fatalf("redistest: KillMaster(%d): the cluster has %d masters", i, c.masters)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	k := slices.IndexFunc(c.nodes, (*Server).Running)
	if k < 0 {
		t.Fatalf("redistest: KillMaster(%d): no node is running", i)
	}
	view, err := clusterNodes(ctx, c.admins[k])
	if err != nil {
		t.Fatalf("redistest: KillMaster(%d): %s: %v", i, c.nodes[k].Addr(), err)
	}
	port, ok := servingMaster(view, c.ranges[i].lo)
	if !ok {
		t.Fatalf("redistest: KillMaster(%d): no healthy master serves slot %d", i, c.ranges[i].lo)
	}
	for _, s := range c.nodes {
		if s.port == port && s.Running() {
			s.Stop(t)
			return
		}
	}
	t.Fatalf("redistest: KillMaster(%d): the serving master :%d is not running", i, port)
}

// WaitHealthy waits until every live node reports cluster_state:ok, each
// slot range is served by a live master that all live nodes agree on, and
// every live replica is in sync; it fails the test after timeout.
func (c *Cluster) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.waitFor(ctx, func(ctx context.Context) error { return c.check(ctx, false) }); err != nil {
		t.Fatalf("redistest: cluster not healthy after %s: %v", timeout, err)
	}
}

// nodeInfo is one line of CLUSTER NODES.
type nodeInfo struct {
	id       string
	port     int
	flags    map[string]bool
	masterID string // "-" for masters
	link     string
	slots    []slotRange
}

func (n nodeInfo) isReplica() bool { return n.flags["slave"] }

// servingMaster finds the healthy master whose slots include slot.
func servingMaster(view []nodeInfo, slot int) (port int, ok bool) {
	for _, n := range view {
		if !n.flags["master"] || n.flags["fail"] || n.flags["fail?"] {
			continue
		}
		for _, r := range n.slots {
			if slot >= r.lo && slot <= r.hi {
				return n.port, true
			}
		}
	}
	return 0, false
}

func clusterNodes(ctx context.Context, a *redis.Client) ([]nodeInfo, error) {
	text, err := a.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	return parseClusterNodes(text)
}

// parseClusterNodes reads the CLUSTER NODES format:
// <id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...
func parseClusterNodes(text string) ([]nodeInfo, error) {
	var out []nodeInfo
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %q: too few fields", line)
		}
		hostPort, _, _ := strings.Cut(f[1], "@")
		hostPort, _, _ = strings.Cut(hostPort, ",")
		_, p, err := net.SplitHostPort(hostPort)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES address %q: %w", f[1], err)
		}
		port, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES port %q: %w", f[1], err)
		}
		n := nodeInfo{id: f[0], port: port, flags: map[string]bool{}, masterID: f[3], link: f[7]}
		for fl := range strings.SplitSeq(f[2], ",") {
			n.flags[fl] = true
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") { // a slot being imported or migrated
				continue
			}
			r, err := parseSlots(s)
			if err != nil {
				return nil, err
			}
			n.slots = append(n.slots, r)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("CLUSTER NODES: empty answer")
	}
	return out, nil
}

func parseSlots(s string) (slotRange, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	l, err1 := strconv.Atoi(lo)
	h, err2 := strconv.Atoi(hi)
	if err := errors.Join(err1, err2); err != nil {
		return slotRange{}, fmt.Errorf("CLUSTER NODES slots %q: %w", s, err)
	}
	return slotRange{lo: l, hi: h}, nil
}

// infoFields runs an INFO-style command and returns its key:value lines.
func infoFields(ctx context.Context, a *redis.Client, args ...any) (map[string]string, error) {
	text, err := a.Do(ctx, args...).Text()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			out[k] = v
		}
	}
	return out, nil
}
