// Package telemetrytest is an OTLP/HTTP trace receiver for tests: the
// collector a traced cobranca exports to, decoding what it receives with the
// OTLP protobuf definitions, and keeping the bytes as they came, so that a
// test can look for what must never be exported.
package telemetrytest

import (
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"encoding/hex"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver accepts OTLP/HTTP trace exports (protobuf, possibly gzipped) at
// /v1/traces.
type Receiver struct {
	// URL is the base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string
	// Certificate is the TLS receiver's certificate (NewTLSReceiver),
	// self-signed: trust it to export there. Nil for plain HTTP.
	Certificate *x509.Certificate

	mu     sync.Mutex
	raw    bytes.Buffer
	spans  []Span
	header http.Header
	bad    []string
}

// Span is one span received, with its resource's attributes.
type Span struct {
	*tracepb.Span
	Resource map[string]string
}

// Attr returns the span's attribute key as text ("" when absent).
func (s Span) Attr(key string) string { return attrs(s.GetAttributes())[key] }

// ID and Parent are the span's id and its parent's, in hex ("" for a root).
func (s Span) ID() string     { return hex.EncodeToString(s.GetSpanId()) }
func (s Span) Parent() string { return hex.EncodeToString(s.GetParentSpanId()) }

// TraceID is the span's trace id, in hex.
func (s Span) TraceID() string { return hex.EncodeToString(s.GetTraceId()) }

// NewReceiver starts a receiver, closed when t ends.
func NewReceiver(t testing.TB) *Receiver { return newReceiver(t, false) }

// NewTLSReceiver starts a receiver at an https URL, with a certificate no
// system trusts (Certificate), closed when t ends. The handshakes it
// refuses are not logged.
func NewTLSReceiver(t testing.TB) *Receiver { return newReceiver(t, true) }

func newReceiver(t testing.TB, secure bool) *Receiver {
	r := &Receiver{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	if secure {
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
		r.Certificate = srv.Certificate()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if bad := r.problems(); len(bad) > 0 {
			t.Errorf("the OTLP receiver refused exports: %q", bad)
		}
	})
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	fail := func(msg string) {
		r.mu.Lock()
		r.bad = append(r.bad, msg)
		r.mu.Unlock()
		http.Error(w, msg, http.StatusBadRequest)
	}
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		fail(req.Method + " " + req.URL.Path + " " + req.Header.Get("Content-Type") + ": not an OTLP/HTTP protobuf trace export")
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			fail("gzip: " + err.Error())
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		fail("read: " + err.Error())
		return
	}
	var export coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &export); err != nil {
		fail("decode: " + err.Error())
		return
	}
	r.mu.Lock()
	r.header = req.Header.Clone()
	r.raw.Write(b)
	for _, rs := range export.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, Span{Span: s, Resource: res})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}

// Header returns the headers of the last export.
func (r *Receiver) Header() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.header
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Raw returns every export's bytes as received (decompressed): where a
// value that must not be exported would be, whatever field held it.
func (r *Receiver) Raw() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.raw.Bytes())
}

// Children returns the spans whose parent is s.
func Children(spans []Span, s Span) []Span {
	var out []Span
	for _, c := range spans {
		if c.Parent() == s.ID() && c.TraceID() == s.TraceID() {
			out = append(out, c)
		}
	}
	return out
}

// attrs renders attributes as text, by key.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch v.GetValue().(type) {
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = strconv.FormatInt(v.GetIntValue(), 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = strconv.FormatBool(v.GetBoolValue())
		default:
			m[kv.GetKey()] = v.GetStringValue()
		}
	}
	return m
}
