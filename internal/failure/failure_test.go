package failure

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestWhatTheCallerReads: Text and Detail carry code, field, message and the
// wait, and never the cause, which only Error (for the logs) includes.
func TestWhatTheCallerReads(t *testing.T) {
	cause := errors.New("dial tcp 10.0.0.1:5432: refused")
	tests := []struct {
		e          *Error
		text, json string
	}{
		{&Error{Code: "invalid_date", Field: "invoices[1].dueDate", Message: "not a date"},
			"invalid_date: invoices[1].dueDate: not a date", `{"code":"invalid_date","message":"not a date","field":"invoices[1].dueDate"}`},
		{&Error{Code: Unavailable, Message: "store down", RetryAfter: 1500 * time.Millisecond, Err: cause},
			"unavailable: store down", `{"code":"unavailable","message":"store down","retryAfterMs":1500}`},
	}
	for _, tt := range tests {
		if got := tt.e.Text(); got != tt.text {
			t.Errorf("Text() = %q, want %q", got, tt.text)
		}
		if got, _ := json.Marshal(tt.e.Detail()); string(got) != tt.json {
			t.Errorf("Detail() = %s, want %s", got, tt.json)
		}
		w := httptest.NewRecorder()
		WriteHTTP(w, http.StatusTooManyRequests, tt.e)
		if want := `{"error":` + tt.json + "}\n"; w.Code != http.StatusTooManyRequests || w.Body.String() != want || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("WriteHTTP = %d %s %q, want 429 application/json %q", w.Code, w.Header().Get("Content-Type"), w.Body, want)
		}
	}
	if got, want := tests[1].e.Error(), "unavailable: store down: "+cause.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestHTTPStatus: the edge's statuses of the codes every tool shares, and 422 for a domain's.
func TestHTTPStatus(t *testing.T) {
	for code, want := range map[Code]int{
		InvalidArguments:               http.StatusBadRequest,
		InsufficientUserAuthentication: http.StatusUnauthorized,
		InsufficientScope:              http.StatusForbidden,
		PersonRequired:                 http.StatusForbidden,
		PersonLacksRole:                http.StatusForbidden,
		IdempotencyConflict:            http.StatusConflict,
		RequestInProgress:              http.StatusConflict,
		RateLimited:                    http.StatusTooManyRequests,
		Unavailable:                    http.StatusServiceUnavailable,
		Internal:                       http.StatusInternalServerError,
		"invoice_already_written_off":  http.StatusUnprocessableEntity,
	} {
		if got := HTTPStatus(code); got != want {
			t.Errorf("HTTPStatus(%s) = %d, want %d", code, got, want)
		}
	}
}
