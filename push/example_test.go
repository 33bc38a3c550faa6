package push_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/push"
)

// receiver is a webhook receiver that shares the gateway's webhook secret
// (push.webhook_secret_env): it takes a notification only when its
// Standard Webhooks signature holds at now.
func receiver(secret []byte, now func() time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := push.VerifyStandardWebhook(secret, r.Header, body, now(), 0); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// Deduplicate on the webhook-id header, then handle body.
		w.WriteHeader(http.StatusNoContent)
	})
}

// A receiver checks each notification with VerifyStandardWebhook. The
// notification is the signed example of the Standard Webhooks
// specification: accepted as sent, refused with another body, and refused
// as a replay an hour later.
func ExampleVerifyStandardWebhook() {
	secret, err := push.ParseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		fmt.Println(err)
		return
	}
	sent := time.Unix(1614265330, 0)
	for _, tc := range []struct {
		body string
		at   time.Time
	}{
		{`{"test": 2432232314}`, sent},
		{`{"test": 2432232315}`, sent},
		{`{"test": 2432232314}`, sent.Add(time.Hour)},
	} {
		req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(tc.body))
		req.Header.Set(push.HeaderWebhookID, "msg_p5jXN8AQM9LWM0D4loKWxJek")
		req.Header.Set(push.HeaderWebhookTimestamp, "1614265330")
		req.Header.Set(push.HeaderWebhookSignature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
		rec := httptest.NewRecorder()
		receiver(secret, func() time.Time { return tc.at }).ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// 204
	// 401
	// 401
}
