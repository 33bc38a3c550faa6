package console

import (
	"context"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// openTasks is how many open tasks the scale test keeps.
const openTasks = 10_000

// A page costs the store calls of one page, however many tasks there are:
// it follows the store's index with a cursor and never scans.
func TestPagesDoOnePageOfWorkAtTenThousandTasks(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testPagesAtScale(t, store.NewMemory(store.Options{Memory: store.MemoryOptions{MaxEntries: 4 * openTasks}}))
	})
	t.Run("redis", func(t *testing.T) {
		if testing.Short() {
			t.Skip("writes 10,000 records to a real redis-server")
		}
		client := redistest.Start(t).Client(t)
		testPagesAtScale(t, store.NewRedis(client, store.Options{KeyPrefix: "console-scale"}))
	})
}

var nextLink = regexp.MustCompile(`id="next" href="([^"]+)"`)

func testPagesAtScale(t *testing.T, st store.Store) {
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	base := time.Now().Add(-time.Hour).UTC()
	for i := range openTasks {
		at := base.Add(time.Duration(i) * time.Millisecond)
		rec := store.TaskLifecycle{Agent: testAgent, TaskID: fmt.Sprintf("task-%05d", i), Tenant: fmt.Sprintf("tenant-%d", i%7),
			Subject: "alice", State: "working", StateSince: at, Created: at, LastActivity: at}
		if _, ok, err := st.Lifecycle().Save(ctx, rec, 0); err != nil || !ok {
			t.Fatalf("save %d: %v %v", i, ok, err)
		}
	}
	f := newFixture(t, st)
	page := f.c.o.Config.PageSize
	c := f.client()
	c.signIn(t, testOpsToken)
	f.life.lists.Store(0)
	f.life.count.Store(0)
	f.life.listed.Store(0)

	path := Prefix + "tasks?agent=demo&state=open"
	seen := map[string]bool{}
	for n := range 3 {
		before := f.life.lists.Load()
		listed := f.life.listed.Load()
		resp, body := c.get(path)
		if resp.StatusCode != 200 {
			t.Fatalf("page %d: %d", n, resp.StatusCode)
		}
		if calls := f.life.lists.Load() - before; calls != 1 {
			t.Fatalf("page %d made %d List calls, want 1", n, calls)
		}
		if got := f.life.listed.Load() - listed; got > int64(page) {
			t.Fatalf("page %d read %d records, more than a page (%d)", n, got, page)
		}
		rows := strings.Count(body, `class="task-link"`)
		if rows != page {
			t.Fatalf("page %d shows %d tasks, want %d", n, rows, page)
		}
		for _, m := range regexp.MustCompile(`>(task-\d{5})</a>`).FindAllStringSubmatch(body, -1) {
			if seen[m[1]] {
				t.Fatalf("page %d repeats %s", n, m[1])
			}
			seen[m[1]] = true
		}
		m := nextLink.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("page %d has no link to the next", n)
		}
		path = html.UnescapeString(m[1])
	}
	if max := f.life.maxLimit.Load(); max != int64(page) {
		t.Fatalf("List was asked for up to %d records, want the page size %d", max, page)
	}
	if f.life.gets.Load() != 0 || f.life.count.Load() != 0 {
		t.Fatalf("the task list made other store calls: %d Get, %d CountByState", f.life.gets.Load(), f.life.count.Load())
	}

	// The overview: one count and one page of orphans per agent.
	f.life.lists.Store(0)
	f.life.listed.Store(0)
	resp, body := c.get(Prefix)
	agents := int64(len(f.tasks.Agents()))
	if resp.StatusCode != 200 || f.life.count.Load() != agents || f.life.lists.Load() != agents || f.life.listed.Load() > agents*int64(page) {
		t.Fatalf("overview: %d, %d CountByState, %d List calls reading %d records", resp.StatusCode, f.life.count.Load(), f.life.lists.Load(), f.life.listed.Load())
	}
	if !strings.Contains(body, ">10000</a>") {
		t.Fatal("the overview does not count the 10,000 open tasks")
	}
}
