package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// A 0.3 push consumer is always sent the full Task (A2A 0.3 §9: the agent
// POSTs the Task), even for a status or artifact update. The push relay
// keeps the latest task snapshot per task, in the 1.0 shape (a bare Task),
// and FoldTask folds every event into it:
//
//   - a task replaces the snapshot, except for what the snapshot knows that
//     the task cannot have known yet: a task from another source (an
//     upstream subscription opened while a caller's stream was relayed) may
//     be older than events logged before it. So a terminal status is never
//     replaced by a non-terminal one, an artifact the task lacks is kept,
//     and one with more parts than the task's copy keeps its parts;
//   - a status update replaces its status, and its metadata is merged into
//     the task's (so a watchdog notice reaches 0.3 consumers too);
//   - an artifact update adds the artifact, replaces the one with the same
//     artifactId, or, with "append": true, appends its parts to it.
//
// A task the relay first sees through an update starts as {id, contextId}.

// FoldTask returns the task snapshot snap (nil when there is none) with
// one event folded in: payload, an event of kind in the shape of version
// from, of task taskID in context contextID.
func FoldTask(snap, payload []byte, from Version, kind EventKind, taskID, contextID string) ([]byte, error) {
	obj, err := EventObject(payload, from, kind)
	if err != nil {
		return nil, fmt.Errorf("fold the event into the task snapshot: %w", err)
	}
	var old map[string]any
	if snap != nil {
		dec := json.NewDecoder(bytes.NewReader(snap))
		dec.UseNumber()
		if err := dec.Decode(&old); err != nil {
			return nil, fmt.Errorf("read the task snapshot: %w", err)
		}
	}
	if kind == EventTask {
		return json.Marshal(foldTask(old, obj))
	}
	task := old
	if task == nil {
		task = map[string]any{"id": taskID}
		if contextID != "" {
			task["contextId"] = contextID
		}
	}
	if _, ok := task["contextId"]; !ok {
		if c, ok := obj["contextId"]; ok {
			task["contextId"] = c
		}
	}
	switch kind {
	case EventStatusUpdate:
		if st, ok := obj["status"]; ok {
			task["status"] = st
		}
		if md, ok := obj["metadata"].(map[string]any); ok {
			merged, _ := task["metadata"].(map[string]any)
			if merged == nil {
				merged = map[string]any{}
			}
			maps.Copy(merged, md)
			task["metadata"] = merged
		}
	case EventArtifactUpdate:
		if art, ok := obj["artifact"].(map[string]any); ok {
			appendParts, _ := obj["append"].(bool)
			task["artifacts"] = foldArtifact(task["artifacts"], art, appendParts)
		}
	}
	return json.Marshal(task)
}

// foldArtifact applies one artifact update to the task's artifacts.
func foldArtifact(list any, art map[string]any, appendParts bool) []any {
	arts, _ := list.([]any)
	id := art["artifactId"]
	for i, e := range arts {
		old, ok := e.(map[string]any)
		if !ok || id == nil || old["artifactId"] != id {
			continue
		}
		if appendParts {
			oldParts, _ := old["parts"].([]any)
			newParts, _ := art["parts"].([]any)
			merged := maps.Clone(art)
			merged["parts"] = append(append([]any{}, oldParts...), newParts...)
			arts[i] = merged
		} else {
			arts[i] = art
		}
		return arts
	}
	return append(arts, art)
}

// foldTask returns task as the new snapshot, keeping from old what task
// cannot have known yet (see above).
func foldTask(old, task map[string]any) map[string]any {
	if old == nil {
		return task
	}
	if snapshotState(old).Terminal() && !snapshotState(task).Terminal() {
		task["status"] = old["status"]
	}
	oldArts, _ := old["artifacts"].([]any)
	arts, _ := task["artifacts"].([]any)
	for _, e := range oldArts {
		oa, ok := e.(map[string]any)
		if !ok {
			continue
		}
		i := slices.IndexFunc(arts, func(n any) bool {
			na, ok := n.(map[string]any)
			return ok && oa["artifactId"] != nil && na["artifactId"] == oa["artifactId"]
		})
		switch {
		case i < 0:
			arts = append(arts, oa)
		case partCount(oa) > partCount(arts[i].(map[string]any)):
			arts[i] = oa
		}
	}
	if arts != nil {
		task["artifacts"] = arts
	}
	return task
}

func partCount(a map[string]any) int {
	parts, _ := a["parts"].([]any)
	return len(parts)
}

// snapshotState reads a 1.0 snapshot's state.
func snapshotState(task map[string]any) State {
	st, _ := task["status"].(map[string]any)
	s, _ := st["state"].(string)
	return ParseState(s)
}
