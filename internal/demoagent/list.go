package demoagent

import (
	"bytes"
	"encoding/base64"
	"strconv"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// listTasks serves ListTasks, newest first. The page token names the last
// task of the previous page, so pages stay stable while tasks are added.
func (a *Agent) listTasks(c *call) (reply, *a2a.Error) {
	q, e := decodeTaskQuery(c.params, c.query, true)
	if e != nil {
		return reply{}, e
	}
	cursor := ^uint64(0)
	if q.pageToken != "" {
		var ok bool
		if cursor, ok = decodePageToken(q.pageToken); !ok {
			return reply{}, a2a.ErrInvalidParams.WithMessage("pageToken is not one this agent issued")
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var total int
	var page []*task
	for i := len(a.order) - 1; i >= 0; i-- {
		t := a.order[i]
		if (q.contextID != "" && t.contextID != q.contextID) ||
			(q.state != a2a.StateUnknown && t.status.state != q.state) ||
			(!q.after.IsZero() && t.status.at.Before(q.after)) {
			continue
		}
		total++
		if t.seq < cursor && len(page) < q.pageSize+1 {
			page = append(page, t)
		}
	}
	next := ""
	if len(page) > q.pageSize {
		page = page[:q.pageSize]
		next = encodePageToken(page[len(page)-1].seq)
	}
	tasks := make([]any, len(page))
	for i, t := range page {
		tasks[i] = c.d.task(t.view(q.historyLength, q.includeArtifacts))
	}
	return reply{result: obj{"tasks": tasks, "nextPageToken": next, "pageSize": q.pageSize, "totalSize": total}}, nil
}

const pageTokenPrefix = "after:"

func encodePageToken(seq uint64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(pageTokenPrefix + strconv.FormatUint(seq, 10)))
}

func decodePageToken(s string) (uint64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || !bytes.HasPrefix(b, []byte(pageTokenPrefix)) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[len(pageTokenPrefix):]), 10, 64)
	return n, err == nil
}
