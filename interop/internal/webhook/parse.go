package webhook

import (
	"encoding/json"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Parse reads a notification body in any dialect the gateway sends: a 1.0
// StreamResponse, or a 0.3 Task or event.
func Parse(body []byte) Delivery {
	ev, err := a2a.ParseResult(body)
	if err != nil {
		return Delivery{Error: "not an A2A event: " + err.Error()}
	}
	if ev.TaskID == "" {
		return Delivery{Kind: ev.Kind.String(), Error: "the notification names no task"}
	}
	d := Delivery{TaskID: ev.TaskID, Kind: ev.Kind.String()}
	if ev.Kind == a2a.EventTask || ev.Kind == a2a.EventStatusUpdate {
		d.State = ev.State.String()
	}
	d.Event = describe(body, ev)
	return d
}

// describe names a notification the way the cases name stream events:
// "task:working", "status:completed", "artifact:chunk 1". A task's
// artifacts follow its state, "task:completed [echo: hi]", so that the
// full tasks a 0.3 consumer receives show what each event added.
func describe(body []byte, ev a2a.Event) string {
	obj, err := a2a.EventObject(body, bodyVersion(body), ev.Kind)
	if err != nil {
		return "unreadable:" + ev.Kind.String()
	}
	switch ev.Kind {
	case a2a.EventTask:
		s := "task:" + ev.State.String()
		arts, _ := obj["artifacts"].([]any)
		var texts []string
		for _, a := range arts {
			if art, ok := a.(map[string]any); ok {
				texts = append(texts, partsText(art))
			}
		}
		if len(texts) > 0 {
			s += " [" + strings.Join(texts, ", ") + "]"
		}
		return s
	case a2a.EventStatusUpdate:
		return "status:" + ev.State.String()
	case a2a.EventArtifactUpdate:
		art, _ := obj["artifact"].(map[string]any)
		return "artifact:" + partsText(art)
	default:
		return ev.Kind.String()
	}
}

// partsText joins the text parts of an artifact in the 1.0 shape.
func partsText(art map[string]any) string {
	parts, _ := art["parts"].([]any)
	var b strings.Builder
	for _, p := range parts {
		if part, ok := p.(map[string]any); ok {
			if t, ok := part["text"].(string); ok {
				b.WriteString(t)
			}
		}
	}
	return b.String()
}

// bodyVersion tells a body's version by its shape: 0.3 objects carry
// their kind, 1.0 StreamResponses a member naming it.
func bodyVersion(body []byte) a2a.Version {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil {
		if _, ok := top["kind"]; ok {
			return a2a.V03
		}
	}
	return a2a.V10
}
