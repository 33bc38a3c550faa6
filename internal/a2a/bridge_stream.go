package a2a

import "encoding/json"

// StreamEndEvent is the stream event a bridged stream to method m ends
// with for a caller in form to when the agent's stream left the task in
// state st without marking the end as to's version does: 0.3 readers take
// a status update with final set as a stream's end, which 1.0 agents never
// send (a 1.0 stream ends with the task's last state). It is that status
// update, spelled in to like every translated event (final comes from the
// state); nil for a 1.0 reader, whose stream needs no such event.
func StreamEndEvent(m Method, to Form, taskID, contextID string, st State) ([]byte, error) {
	if to.Version == V10 {
		return nil, nil
	}
	type status struct {
		State string `json:"state"`
	}
	type update struct {
		TaskID    string `json:"taskId"`
		ContextID string `json:"contextId"`
		Status    status `json:"status"`
	}
	b, err := json.Marshal(struct {
		StatusUpdate update `json:"statusUpdate"`
	}{update{taskID, contextID, status{st.Wire(V10)}}})
	if err != nil {
		return nil, err
	}
	return TranslateResult(m, b, Form{Version: V10, Binding: BindingJSONRPC}, to)
}

// RPCResultFrame wraps result, which must be valid JSON (a translated
// result is), in a JSON-RPC response to the request with id, as RPCResult
// does but without reading result again: a bridged answer is framed once
// per answer or event.
func RPCResultFrame(id, result []byte) []byte {
	if len(id) == 0 {
		id = []byte("null")
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	out := make([]byte, 0, len(head)+len(id)+len(mid)+len(result)+1)
	out = append(append(append(append(out, head...), id...), mid...), result...)
	return append(out, '}')
}
