package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/config"
)

// TestLogFormat: COBRANCA_LOG_FORMAT=auto writes text to a terminal and
// JSON to anything else; json and text are what they say wherever they go.
func TestLogFormat(t *testing.T) {
	pipe := func(t *testing.T) (w io.Writer, r io.Reader) {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pr.Close(); pw.Close() })
		return pw, pr
	}
	terminal := func(t *testing.T) (io.Writer, io.Reader) { return openPTY(t) }
	file := func(t *testing.T) (io.Writer, io.Reader) {
		f, err := os.Create(t.TempDir() + "/log")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		r, err := os.Open(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return f, r
	}
	tests := []struct {
		format   string
		dest     string
		open     func(*testing.T) (io.Writer, io.Reader)
		wantJSON bool
	}{
		{"auto", "terminal", terminal, false},
		{"auto", "pipe", pipe, true},
		{"auto", "file", file, true},
		{"json", "terminal", terminal, true},
		{"text", "pipe", pipe, false},
		{"text", "file", file, false},
	}
	for _, tt := range tests {
		t.Run(tt.format+" to a "+tt.dest, func(t *testing.T) {
			cfg, err := config.Load([]string{"COBRANCA_LOG_FORMAT=" + tt.format})
			if err != nil {
				t.Fatal(err)
			}
			w, r := tt.open(t)
			newLogger(w, cfg).Info("cobranca listening", "addr", "127.0.0.1:8080")
			line, err := bufio.NewReader(r).ReadString('\n')
			if err != nil {
				t.Fatalf("reading the log line: %v (%q)", err, line)
			}
			line = strings.TrimRight(line, "\r\n")
			var v map[string]any
			isJSON := json.Unmarshal([]byte(line), &v) == nil
			if isJSON != tt.wantJSON {
				t.Errorf("log line %q: JSON = %v, want %v", line, isJSON, tt.wantJSON)
			}
			if !tt.wantJSON && !strings.Contains(line, `msg="cobranca listening" addr=127.0.0.1:8080`) {
				t.Errorf("text log line = %q, want slog's key=value text", line)
			}
		})
	}
}

// TestLogDurations: every time.Duration is logged as Go writes it, in both
// formats, never as a number of nanoseconds; the configuration line's
// rate_store_timeout among them.
func TestLogDurations(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			cfg, err := config.Load([]string{"COBRANCA_LOG_FORMAT=" + format, "COBRANCA_RATE_STORE_TIMEOUT=250ms"})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			newLogger(&buf, cfg).Info("cobranca listening", "config", cfg, "duration", 1500*time.Microsecond,
				slog.Group("g", slog.Duration("ttl", time.Hour)))
			got := buf.String()
			if format == "json" {
				var v struct {
					Config struct {
						RateStoreTimeout any `json:"rate_store_timeout"`
					}
					Duration any
					G        struct{ TTL any }
				}
				if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
					t.Fatal(err)
				}
				if v.Config.RateStoreTimeout != "250ms" || v.Duration != "1.5ms" || v.G.TTL != "1h0m0s" {
					t.Errorf("durations = %#v, %#v, %#v; want \"250ms\", \"1.5ms\", \"1h0m0s\" in %s", v.Config.RateStoreTimeout, v.Duration, v.G.TTL, got)
				}
				return
			}
			for _, want := range []string{"config.rate_store_timeout=250ms", "duration=1.5ms", "g.ttl=1h0m0s"} {
				if !strings.Contains(got, want) {
					t.Errorf("log line lacks %s: %s", want, got)
				}
			}
		})
	}
}

// BenchmarkAccessLine: one access line as the server writes it, through the
// logger serve uses (JSON).
func BenchmarkAccessLine(b *testing.B) {
	cfg, err := config.Load([]string{"COBRANCA_LOG_FORMAT=json"})
	if err != nil {
		b.Fatal(err)
	}
	log := newLogger(io.Discard, cfg)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		log.LogAttrs(ctx, slog.LevelInfo, "request",
			slog.String("request_id", "01JDQ3ZK6R8V4W2M5N7P9Q1S3T"), slog.String("method", "POST"), slog.String("path", "/mcp"),
			slog.Int("status", 200), slog.Float64("duration_ms", 1.234), slog.String("subject", "alice"), slog.String("client_id", "cobranca-dev"),
			slog.String("tool", "collections.analyze_portfolio"), slog.String("outcome", "ok"))
	}
}
