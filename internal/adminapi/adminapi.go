// Package adminapi holds the answer format shared by the admin listener's
// APIs (the ops view, the dead-letter queue): JSON, never cached, and
// errors as {"error": "..."}.
package adminapi

import (
	"encoding/json"
	"net/http"
)

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// WriteError answers {"error": msg} with status. msg must be safe to show.
func WriteError(w http.ResponseWriter, status int, msg string) {
	WriteJSON(w, status, map[string]string{"error": msg})
}
