package demoagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Package a2a has already read and checked every id; what is decoded here
// is the content the agent acts on: message parts, metadata and options.

type partIn struct {
	Kind string          `json:"kind"`
	Type string          `json:"type"`
	Text *string         `json:"text"`
	Data json.RawMessage `json:"data"`
}

type messageIn struct {
	Parts []partIn `json:"parts"`
	// Content is the 0.3 protobuf JSON name of the parts.
	Content  []partIn       `json:"content"`
	Metadata map[string]any `json:"metadata"`
}

type sendConfigIn struct {
	ReturnImmediately bool  `json:"returnImmediately"`
	Blocking          *bool `json:"blocking"`
	HistoryLength     *int  `json:"historyLength"`
	// PushNotification is the 0.3 protobuf JSON name of the inline config,
	// which package a2a does not read.
	PushNotification json.RawMessage `json:"pushNotification"`
}

type sendIn struct {
	Message       messageIn     `json:"message"`
	Configuration *sendConfigIn `json:"configuration"`

	parts []part
}

func decodeSend(params []byte, d dialect) (*sendIn, *a2a.Error) {
	var in sendIn
	if err := json.Unmarshal(params, &in); err != nil {
		return nil, a2a.ErrInvalidParams.WithMessage("the message could not be read: " + jsonProblem(err))
	}
	raw := in.Message.Parts
	if len(raw) == 0 {
		raw = in.Message.Content
	}
	for i, p := range raw {
		pt, ok, err := p.decode(d)
		if err != nil {
			return nil, a2a.ErrInvalidParams.WithMessage(fmt.Sprintf("message part %d: %v", i, err))
		}
		if ok {
			in.parts = append(in.parts, pt)
		}
	}
	return &in, nil
}

// decode keeps text and data parts; ok is false for parts of other kinds.
func (p partIn) decode(d dialect) (part, bool, error) {
	disc := p.Kind
	if disc == "" {
		disc = p.Type
	}
	switch {
	case p.Text != nil && (disc == "" || disc == kindText):
		return part{text: *p.Text}, true, nil
	case len(p.Data) > 0 && !bytes.Equal(p.Data, []byte("null")) && (disc == "" || disc == kindData):
		var v any
		if err := json.Unmarshal(p.Data, &v); err != nil {
			return part{}, false, fmt.Errorf("data is not JSON: %w", err)
		}
		if m, isObj := v.(map[string]any); d.proto && isObj && len(m) == 1 && m["data"] != nil {
			v = m["data"] // the 0.3 DataPart wraps its Struct once more
		}
		return part{data: v, isData: true}, true, nil
	}
	return part{}, false, nil
}

// text joins the message's text parts; the first word picks the scenario.
func (in *sendIn) text() string {
	var texts []string
	for _, p := range in.parts {
		if !p.isData {
			texts = append(texts, p.text)
		}
	}
	return strings.Join(texts, " ")
}

// blocking reports whether the caller waits for a terminal or interrupted
// state. absentIsFalse is set where blocking is a plain protobuf bool (0.3
// gRPC): a configuration without it asks not to wait.
func (in *sendIn) blocking(absentIsFalse bool) bool {
	c := in.Configuration
	if c == nil {
		return true
	}
	if c.ReturnImmediately {
		return false
	}
	if c.Blocking == nil {
		return !absentIsFalse
	}
	return *c.Blocking
}

func (in *sendIn) historyLength() int {
	if c := in.Configuration; c != nil && c.HistoryLength != nil && *c.HistoryLength >= 0 {
		return *c.HistoryLength
	}
	return -1
}

// credential is the in-band credential of a message: the Authorization
// header of its request, or the gateway's metadata key.
func (in *sendIn) credential(authorization string) string {
	if authorization != "" {
		return authorization
	}
	if s, ok := in.Message.Metadata[credentialMetadataKey].(string); ok {
		return s
	}
	return ""
}

// taskQuery holds the options of GetTask and ListTasks, read from JSON-RPC
// params or from the REST query string.
type taskQuery struct {
	historyLength    int
	includeArtifacts bool
	contextID        string
	state            a2a.State
	pageSize         int
	pageToken        string
	after            time.Time
}

const (
	defaultPageSize = 50
	maxPageSize     = 100
)

type taskQueryIn struct {
	HistoryLength        *int            `json:"historyLength"`
	IncludeArtifacts     *bool           `json:"includeArtifacts"`
	ContextID            string          `json:"contextId"`
	Status               json.RawMessage `json:"status"`
	PageSize             *int            `json:"pageSize"`
	PageToken            string          `json:"pageToken"`
	StatusTimestampAfter string          `json:"statusTimestampAfter"`
}

// decodeTaskQuery reads the query. includeArtifacts defaults to true for
// GetTask and false for ListTasks, as the 1.0 definition says.
func decodeTaskQuery(params []byte, query url.Values, list bool) (taskQuery, *a2a.Error) {
	var in taskQueryIn
	if len(bytes.TrimSpace(params)) > 0 {
		if err := json.Unmarshal(params, &in); err != nil {
			return taskQuery{}, a2a.ErrInvalidParams.WithMessage("the parameters could not be read: " + jsonProblem(err))
		}
	}
	if e := in.fromQuery(query); e != nil {
		return taskQuery{}, e
	}
	q := taskQuery{historyLength: -1, includeArtifacts: !list, contextID: in.ContextID, pageSize: defaultPageSize, pageToken: in.PageToken}
	if in.HistoryLength != nil {
		if *in.HistoryLength < 0 {
			return q, a2a.ErrInvalidParams.WithMessage("historyLength must not be negative")
		}
		q.historyLength = *in.HistoryLength
	}
	if in.IncludeArtifacts != nil {
		q.includeArtifacts = *in.IncludeArtifacts
	}
	if in.PageSize != nil {
		if *in.PageSize < 1 || *in.PageSize > maxPageSize {
			return q, a2a.ErrInvalidParams.WithMessage(fmt.Sprintf("pageSize must be between 1 and %d", maxPageSize))
		}
		q.pageSize = *in.PageSize
	}
	if in.StatusTimestampAfter != "" {
		t, err := time.Parse(time.RFC3339Nano, in.StatusTimestampAfter)
		if err != nil {
			return q, a2a.ErrInvalidParams.WithMessage("statusTimestampAfter must be an RFC 3339 timestamp")
		}
		q.after = t
	}
	st, e := decodeStateFilter(in.Status)
	q.state = st
	return q, e
}

// fromQuery overlays REST query parameters.
func (in *taskQueryIn) fromQuery(query url.Values) *a2a.Error {
	intParam := func(name string, dst **int) *a2a.Error {
		if s := query.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return a2a.ErrInvalidParams.WithMessage(name + " must be an integer")
			}
			*dst = &n
		}
		return nil
	}
	if e := intParam("historyLength", &in.HistoryLength); e != nil {
		return e
	}
	if e := intParam("pageSize", &in.PageSize); e != nil {
		return e
	}
	if s := query.Get("includeArtifacts"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return a2a.ErrInvalidParams.WithMessage("includeArtifacts must be true or false")
		}
		in.IncludeArtifacts = &b
	}
	if s := query.Get("contextId"); s != "" {
		in.ContextID = s
	}
	if s := query.Get("status"); s != "" {
		in.Status, _ = json.Marshal(s)
	}
	if s := query.Get("pageToken"); s != "" {
		in.PageToken = s
	}
	if s := query.Get("statusTimestampAfter"); s != "" {
		in.StatusTimestampAfter = s
	}
	return nil
}

// decodeStateFilter reads a TaskState filter. Only the enum value 0
// (unspecified, no filter) is accepted as a number: package a2a keeps the
// number table private.
func decodeStateFilter(raw json.RawMessage) (a2a.State, *a2a.Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte("0")) {
		return a2a.StateUnknown, nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return a2a.StateUnknown, a2a.ErrInvalidParams.WithMessage("status must be a task state name")
	}
	st := a2a.ParseState(name)
	if st == a2a.StateUnknown && name != a2a.StateUnknown.Wire(a2a.V10) && name != "" {
		return st, a2a.ErrInvalidParams.WithMessage("status is not a known task state")
	}
	return st, nil
}

// jsonProblem describes a decoding error without echoing the input.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field + " has the wrong type"
	}
	return "malformed JSON"
}
