package a2a

import (
	"mime"
	"net/http"
	"strings"
)

// CheckRequestContentType refuses a request body that is not declared as
// JSON: the media type must be application/json or application/a2a+json
// (1.0.1 prefers the latter), with no parameter but charset=utf-8. The
// gateway reads every body as UTF-8 JSON; an agent that honours a
// text/plain, form, multipart or UTF-16 declaration would read other
// members from the same bytes. A request without a body needs no content
// type (a GET or DELETE), but one it declares must still be JSON.
// Refusals are ContentTypeNotSupported (-32005; HTTP 415 over HTTP+JSON).
func CheckRequestContentType(h http.Header, hasBody bool) *Error {
	values := h.Values("Content-Type")
	switch {
	case len(values) > 1:
		return ErrContentTypeUnsupported.WithMessage("the request has more than one Content-Type")
	case len(values) == 0 && !hasBody:
		return nil
	case len(values) == 0:
		return ErrContentTypeUnsupported.WithMessage("the request body needs Content-Type: application/json")
	}
	mt, params, err := mime.ParseMediaType(values[0])
	if err != nil || mt != "application/json" && mt != "application/a2a+json" {
		return ErrContentTypeUnsupported.WithMessage("Content-Type " + quoteClip(values[0]) + " is not supported; send application/json or application/a2a+json")
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return ErrContentTypeUnsupported.WithMessage("Content-Type " + quoteClip(values[0]) + " is not supported; the only parameter accepted is charset=utf-8")
		}
	}
	return nil
}
