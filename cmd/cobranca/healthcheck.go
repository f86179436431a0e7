package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/cobranca/cobranca/internal/config"
)

// healthPath is what `cobranca healthcheck` asks by default: readiness, not liveness. A
// container's health check says whether it can serve — the store answers and its schema is
// current — so that Compose's `service_healthy`, an orchestrator or a load balancer that reads
// Docker's health state sends it nothing while it cannot. /healthz (the process answers) would
// call a server healthy that answers every call with `unavailable`.
const healthPath = "/readyz"

// healthcheck asks a running server whether it is ready: exit status 0 when it answers 200,
// 1 with one line on stderr saying why not. It needs no shell and no curl (a distroless
// image's HEALTHCHECK runs it).
func healthcheck(ctx context.Context, e env, fs *flagSet, args []string) error {
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer (the server's own readiness check takes at most 2s)")
	pos, err := fs.positional(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return fs.misuse("want at most one URL, got %d arguments", len(pos))
	}
	if *timeout <= 0 {
		return fs.misuse("--timeout must be positive")
	}
	var target string
	if len(pos) == 1 {
		target, err = healthURL(pos[0])
		if err != nil {
			return fs.misuse("%v", err)
		}
	} else {
		target, err = localHealthURL(e.environ)
		if err != nil {
			fmt.Fprintf(e.stderr, "cobranca healthcheck: unhealthy: %v\n", err)
			return exitError(1)
		}
	}
	status, err := probe(ctx, target, *timeout)
	if err != nil {
		fmt.Fprintf(e.stderr, "cobranca healthcheck: unhealthy: %v\n", err)
		return exitError(1)
	}
	fmt.Fprintf(e.stdout, "healthy: GET %s: %s\n", target, status)
	return nil
}

// healthURL is the URL a person named: http or https, with a host; without a path it is the
// server's readiness path.
func healthURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return "", fmt.Errorf("%q is not an http(s) URL like http://127.0.0.1:8080 or http://127.0.0.1:8080/healthz", s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = healthPath
	}
	return u.String(), nil
}

// localHealthURL is the readiness URL of the server this environment configures
// (COBRANCA_ADDR), as a process in the same container reaches it: a wildcard address on the
// loopback. Only the listen address matters here: the configuration's other problems are the
// server's to report, which would not be running.
func localHealthURL(environ []string) (string, error) {
	cfg, err := config.Load(environ)
	base := cfg.LoopbackURL()
	if base == "" {
		return "", fmt.Errorf("cannot tell where the server listens: %w", err)
	}
	return base + healthPath, nil
}

// probe GETs target within timeout and returns its status line and the first line of its
// body when it is 200; anything else is an error saying what came back. It follows no
// redirect and uses no proxy: a health check asks the server itself.
func probe(ctx context.Context, target string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("User-Agent", "cobranca-healthcheck")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("GET %s: no answer within %s", target, timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	status := resp.Status
	if line := firstLine(body); line != "" {
		status += " " + line
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", target, status)
	}
	return status, nil
}

// firstLine is the first line of b, without what a terminal would act on.
func firstLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, strings.TrimSpace(line))
}
