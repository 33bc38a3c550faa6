package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// pageNames are the templates beside layout.html, one per page.
var pageNames = []string{"login.html", "overview.html", "tasks.html", "task.html", "deadletters.html", "deadletter.html", "endpoints.html", "challenges.html", "error.html"}

var funcs = template.FuncMap{
	"since": func(now, t time.Time) string { return human(now.Sub(t)) },
	"dur":   human,
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"seg": url.PathEscape,
}

func parsePages() (map[string]*template.Template, error) {
	out := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// human writes a duration the way an operator reads it: "3d4h", "2m5s",
// "850ms".
func human(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
	days := int(d / (24 * time.Hour))
	return fmt.Sprintf("%dd%dh", days, int((d-time.Duration(days)*24*time.Hour)/time.Hour))
}

// view is what every page template gets.
type view struct {
	Title    string
	Nav      string
	Operator string
	CSRF     string
	Flash    string
	Now      time.Time
	Data     any
}

func (c *Console) render(w http.ResponseWriter, status int, page string, v view) {
	var buf bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		c.o.Log.Error("console: rendering a page failed", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// page renders a signed-in page.
func (c *Console) page(q *request, page, nav, title string, data any) {
	c.render(q.w, http.StatusOK, page, view{
		Title: title, Nav: nav, Operator: q.s.Operator, CSRF: q.s.CSRF, Now: q.now,
		Flash: flash(q.r), Data: data,
	})
}

// flash is the outcome of the last action, carried in the redirect's
// query: a fixed text chosen by the handler, never an error's details.
func flash(r *http.Request) string {
	if m, ok := flashes[r.URL.Query().Get("done")]; ok {
		return m
	}
	return ""
}

var flashes = map[string]string{
	"hold-set":      "Legal hold set.",
	"hold-cleared":  "Legal hold cleared.",
	"cancel-asked":  "The agent was asked to cancel the task; its answer is recorded above.",
	"redelivered":   "Queued again for delivery.",
	"discarded":     "Discarded.",
	"none-selected": "Nothing was selected.",
}

// refuse answers an error page; msg must be safe to show.
func (c *Console) refuse(w http.ResponseWriter, status int, msg string) {
	c.render(w, status, "error.html", view{Title: http.StatusText(status), Data: msg})
}
