package gateway_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

// Registration refuses every forbidden webhook destination with
// InvalidParams, a message naming the host and the reason, and a log line;
// a config given inline refuses the send before it reaches the agent. The
// policy is the tenant's: acme may call its loopback receivers, globex may
// not, and neither may call a private network.
func TestPushSSRFRefusedAtRegistration(t *testing.T) {
	dns := startDNS(t, map[string]string{"private.test.example": "10.0.0.5", "public.test.example": "93.184.216.34"})
	var logs syncBuffer
	env := startPushWith(t, slog.New(slog.NewJSONHandler(&logs, nil)), func(c *config.Config) { c.Push.Resolver = dns.resolver() })
	globex := newCaller(t, env.Env)
	globex.token = env.Token(t, "globex", "gina")
	task := globex.waitingTask(t)
	acmeTask := env.acme.waitingTask(t)
	d := pushDialects()[0]
	for _, tc := range []struct {
		name, url, reason string
	}{
		{"plain http", "http://public.test.example/h", "plain http"},
		{"loopback", "https://127.0.0.1/h", "loopback"},
		{"loopback IPv6", "https://[::1]/h", "loopback"},
		{"RFC 1918", "https://10.1.2.3/h", "private"},
		{"RFC 1918 172", "https://172.16.0.1/h", "private"},
		{"RFC 1918 192", "https://192.168.1.1/h", "private"},
		{"shared", "https://100.64.0.1/h", "shared"},
		{"link-local", "https://169.254.10.10/h", "link-local"},
		{"metadata address", "https://169.254.169.254/latest/meta-data", "metadata"},
		{"metadata name", "https://metadata.google.internal/computeMetadata/v1", "metadata"},
		{"unique-local IPv6", "https://[fd12::1]/h", "unique-local"},
		{"IPv4-mapped loopback", "https://[::ffff:127.0.0.1]/h", "IPv4-mapped"},
		{"NAT64 of a private address", "https://[64:ff9b::a00:1]/h", "NAT64"},
		{"IPv4-translated loopback", "https://[::ffff:0:7f00:1]/h", "IPv4-translated"},
		{"6to4", "https://[2002:5db8:d822::1]/h", "6to4"},
		{"IPv6 documentation 3fff::/20", "https://[3fff::1]/h", "documentation"},
		{"SRv6 SID", "https://[5f00::1]/h", "SRv6"},
		{"IPv6 benchmarking", "https://[2001:2::1]/h", "benchmarking"},
		{"ORCHID", "https://[2001:10::1]/h", "ORCHID"},
		{"IETF protocol assignment", "https://[2001:20::1]/h", "2001::/23"},
		{"outside global unicast", "https://[4000::1]/h", "2000::/3"},
		{"6to4 relay anycast", "https://192.88.99.1/h", "6to4 relay"},
		{"AS112", "https://192.175.48.1/h", "AS112"},
		{"ECS credentials", "https://169.254.170.2/v2/credentials/x", "credentials endpoint"},
		{"EKS Pod Identity", "https://169.254.170.23/v1/credentials", "credentials endpoint"},
		{"Azure WireServer", "https://168.63.129.16/h", "metadata"},
		{"decimal IPv4", "https://2130706433/h", "IPv4"},
		{"hex IPv4", "https://0x7f.1/h", "IPv4"},
		{"localhost", "https://localhost/h", "localhost"},
		{"user info", "https://user:pw@public.test.example/h", "user name"},
		{"not http", "ftp://public.test.example/h", "scheme"},
		{"name of a private address", "https://private.test.example/h", "resolves to 10.0.0.5"},
		{"unresolvable name", "https://nx.test.example/h", "cannot be resolved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			params := `{"taskId":"` + task + `","url":"` + tc.url + `"}`
			_, b, code := globex.call(t, d, pushCall{method: a2a.MethodPushConfigSet, params: params}, "rq")
			if code != a2a.ErrInvalidParams.Code || !strings.Contains(string(b), "webhook URL refused") || !strings.Contains(string(b), tc.reason) {
				t.Fatalf("code %d: %s; want InvalidParams saying %q", code, b, tc.reason)
			}
			if !strings.Contains(logs.String(), `"msg":"push config refused"`) || !strings.Contains(logs.String(), `"reason":"url_policy"`) {
				t.Fatalf("no log line for the refusal: %s", logs.String())
			}
			// Inline with a send: refused before the agent hears of it.
			env.Agent.ResetRequests()
			send := inlineSends(globex, "complete x", tc.url)[0]
			resp, b := globex.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: []byte(send.body)})
			if _, code, _ := a2a.UnwrapRPC(rpcAnswer(t, resp, b)); resp.StatusCode != http.StatusOK || code != a2a.ErrInvalidParams.Code {
				t.Fatalf("inline: HTTP %d: %s", resp.StatusCode, b)
			}
			for _, r := range env.Agent.Requests() {
				if r.Op.Method == a2a.MethodSend {
					t.Fatalf("a send with a refused config reached the agent: %s", r.Body)
				}
			}
		})
	}
	t.Run("another tenant's allowlist", func(t *testing.T) {
		rcv := newWebhook(t)
		params := `{"taskId":"` + task + `","url":"` + rcv.url() + `"}`
		if _, b, code := globex.call(t, d, pushCall{method: a2a.MethodPushConfigSet, params: params}, "rq"); code != a2a.ErrInvalidParams.Code {
			t.Fatalf("globex may call loopback: %s", b)
		}
		params = `{"taskId":"` + acmeTask + `","url":"` + rcv.url() + `"}`
		if _, b, code := env.acme.call(t, d, pushCall{method: a2a.MethodPushConfigSet, params: params}, "rq"); code != 0 {
			t.Fatalf("acme may not call its allowlisted receiver: %s", b)
		}
		params = `{"taskId":"` + acmeTask + `","url":"http://10.1.2.3/h"}`
		if _, b, code := env.acme.call(t, d, pushCall{method: a2a.MethodPushConfigSet, params: params}, "rq"); code != a2a.ErrInvalidParams.Code {
			t.Fatalf("acme may call a private address off its allowlist: %s", b)
		}
	})
}

// A tenant's allowlist opens its destinations on the ports its entries
// name, and never a metadata or credentials endpoint, at registration and
// at dial time: acme may call its receiver's port on loopback and anything
// in link-local space, but not Redis on loopback, and not the credentials
// endpoints inside link-local space, not even through an allowlisted name
// that resolves to one only when the notification is sent.
func TestPushSSRFAllowlistPortsAndMetadata(t *testing.T) {
	dns := startDNS(t, map[string]string{"creds.test.example": "93.184.216.34"})
	rcv := newWebhook(t)
	_, port, _ := net.SplitHostPort(rcv.srv.Listener.Addr().String())
	env := startPush(t, func(c *config.Config) {
		c.Push.Resolver = dns.resolver()
		c.Push.Tenants["acme"] = config.PushTenant{Allowlist: []string{"127.0.0.1:" + port, "169.254.0.0/16:*", "creds.test.example:*"}}
	})
	task := env.acme.waitingTask(t)
	d := pushDialects()[0]
	set := func(id, url string) (string, int) {
		params := `{"taskId":"` + task + `","id":"` + id + `","url":"` + url + `"}`
		_, b, code := env.acme.call(t, d, pushCall{method: a2a.MethodPushConfigSet, params: params}, "rq")
		return string(b), code
	}
	if b, code := set("receiver", rcv.url()); code != 0 {
		t.Fatalf("the allowlisted port: %s", b)
	}
	for _, tc := range []struct{ url, reason string }{
		{"http://127.0.0.1:16379/", "but not port 16379"},
		{"http://127.0.0.1/h", "but not port 80"},
		{"http://169.254.170.23/v1/credentials", "credentials endpoint"},
		{"http://169.254.170.2:80/v2/credentials", "credentials endpoint"},
		{"http://169.254.169.254/latest/meta-data", "metadata"},
		{"http://169.254.169.253/", "metadata"},
	} {
		if b, code := set("refused", tc.url); code != a2a.ErrInvalidParams.Code || !strings.Contains(b, tc.reason) {
			t.Errorf("%s: code %d: %s; want InvalidParams saying %q", tc.url, code, b, tc.reason)
		}
	}
	if b, code := set("creds", "http://creds.test.example:"+port+"/h"); code != 0 {
		t.Fatalf("an allowlisted name resolving to a public address: %s", b)
	}
	dns.set("creds.test.example", "169.254.170.23")
	if dl := firstDeadLetter(t, env, env.acme, task); dl.TaskID != task || !strings.Contains(dl.Reason, "undeliverable") || !strings.Contains(dl.Reason, "credentials endpoint") {
		t.Fatalf("dead letter %+v", dl)
	}
	eventually(t, "the allowlisted receiver gets the notification", func() bool { return len(rcv.all()) > 0 })
}

// A name that resolved to a public address at registration and resolves to
// loopback when the notification is sent (DNS rebinding) is refused at
// dial time: nothing reaches the address, the notification is
// dead-lettered as undeliverable.
func TestPushSSRFRebindingRefusedAtDial(t *testing.T) {
	dns := startDNS(t, map[string]string{"rebind.test.example": "93.184.216.34"})
	env := startPush(t, func(c *config.Config) { c.Push.Resolver = dns.resolver() })
	var reached atomic.Int64
	target := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	t.Cleanup(target.Close)
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	globex := newCaller(t, env.Env)
	globex.token = env.Token(t, "globex", "gina")
	task := globex.waitingTask(t)
	d := pushDialects()[0]
	params := `{"taskId":"` + task + `","id":"rebound","url":"https://rebind.test.example:` + port + `/h"}`
	if _, b, code := globex.call(t, d, pushCall{method: a2a.MethodPushConfigSet, params: params}, "rq"); code != 0 {
		t.Fatalf("registration of a public name: %s", b)
	}
	dns.set("rebind.test.example", "127.0.0.1")
	dl := firstDeadLetter(t, env, globex, task)
	if dl.TaskID != task || !strings.Contains(dl.Reason, "undeliverable") || !strings.Contains(dl.Reason, "loopback") {
		t.Fatalf("dead letter %+v", dl)
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the rebound address was reached %d times", n)
	}
}

type deadLetter struct{ TaskID, Reason string }

// firstDeadLetter subscribes c to task, which gives the task's push
// configs an event to deliver, and waits for the first dead letter.
func firstDeadLetter(t *testing.T, env *pushEnv, c *caller, task string) deadLetter {
	t.Helper()
	sub := c.open(t, context.Background(), request{method: http.MethodPost, path: "/", header: v10(), rpc: true,
		body: rpcBody(a2a.MethodSubscribe, a2a.V10, "sub", `{"id":"`+task+`"}`)})
	if _, err := sub.rd.Next(); err != nil {
		t.Fatal(err)
	}
	var dead struct {
		DeadLetters []deadLetter `json:"deadLetters"`
	}
	eventually(t, "a notification is dead-lettered", func() bool {
		return env.opsGet(t, "/admin/push/dead-letters", &dead) == http.StatusOK && len(dead.DeadLetters) > 0
	})
	return dead.DeadLetters[0]
}

// syncBuffer is a log sink safe for the gateway's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

// testDNS is a DNS server on loopback answering A queries from a table
// the test changes between lookups; unknown names get NXDOMAIN.
type testDNS struct {
	conn    *net.UDPConn
	mu      sync.Mutex
	answers map[string]netip.Addr
}

func startDNS(t *testing.T, answers map[string]string) *testDNS {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	d := &testDNS{conn: conn, answers: map[string]netip.Addr{}}
	for name, a := range answers {
		d.set(name, a)
	}
	done := make(chan struct{})
	go d.serve(done)
	t.Cleanup(func() { conn.Close(); <-done })
	return d
}

func (d *testDNS) set(name, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answers[name] = netip.MustParseAddr(addr)
}

func (d *testDNS) resolver() *net.Resolver {
	server := d.conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dialer net.Dialer
		return dialer.DialContext(ctx, "udp", server)
	}}
}

func (d *testDNS) serve(done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if reply := d.answer(buf[:n]); reply != nil {
			_, _ = d.conn.WriteToUDP(reply, from)
		}
	}
}

// answer echoes the question and answers an A query from the table; AAAA
// queries get no records.
func (d *testDNS) answer(q []byte) []byte {
	if len(q) < 12 {
		return nil
	}
	var labels []string
	off := 12
	for off < len(q) && q[off] != 0 {
		l := int(q[off])
		if off+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[off+1:off+1+l]))
		off += 1 + l
	}
	if off+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[off+1 : off+3])
	d.mu.Lock()
	addr, known := d.answers[strings.ToLower(strings.Join(labels, "."))]
	d.mu.Unlock()
	out := append([]byte{q[0], q[1], 0x84 | q[2]&1, 0x80}, 0, 1, 0, 0, 0, 0, 0, 0)
	if !known {
		out[3] |= 3 // NXDOMAIN
	}
	out = append(out, q[12:off+5]...)
	if known && qtype == 1 && addr.Is4() {
		b := addr.As4()
		out[7] = 1
		out = append(out, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
		out = append(out, b[:]...)
	}
	return out
}
