// Package config loads cobranca's configuration from the environment into one
// Config value, validated at once, with every problem reported together.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Config is the whole configuration of a cobranca process.
type Config struct {
	// Env is "development" (default) or "production".
	Env string
	// Addr is the listen address of `cobranca serve`.
	Addr string
	// AllowedOrigins lists the Origin values (scheme://host[:port]) browsers
	// may send to the MCP endpoint; requests with any other Origin get 403.
	AllowedOrigins []string
	// AllowedHosts lists the Host header values accepted besides loopback
	// names; a deployment behind a proxy names its public host here.
	AllowedHosts []string
	// MaxBodyBytes bounds a request body; larger ones get 413 unparsed.
	MaxBodyBytes int64
	// LogLevel is the minimum slog level.
	LogLevel slog.Level
	// DataDir holds the embedded database and development keys.
	DataDir string
}

// Production reports whether cobranca runs in production mode.
func (c Config) Production() bool { return c.Env == "production" }

// LogValue keeps secrets out of logs; today no field is secret, but the
// method is the one place to redact one when it is.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("env", c.Env),
		slog.String("addr", c.Addr),
		slog.Any("allowed_origins", c.AllowedOrigins),
		slog.Any("allowed_hosts", c.AllowedHosts),
		slog.Int64("max_body_bytes", c.MaxBodyBytes),
		slog.String("log_level", c.LogLevel.String()),
		slog.String("data_dir", c.DataDir),
	)
}

// variable describes one COBRANCA_* environment variable.
type variable struct {
	name  string
	def   string
	doc   string
	apply func(c *Config, v string) error
}

// Variables lists every environment variable cobranca reads, with its default
// and meaning; the README's table is this list.
func Variables() [][3]string {
	out := make([][3]string, 0, len(variables))
	for _, v := range variables {
		out = append(out, [3]string{v.name, v.def, v.doc})
	}
	return out
}

var variables = []variable{
	{"COBRANCA_ENV", "development", "`development` or `production`. Production refuses development conveniences (generated keys, auto-migrate by default).", func(c *Config, v string) error {
		if v != "development" && v != "production" {
			return errors.New(`must be "development" or "production"`)
		}
		c.Env = v
		return nil
	}},
	{"COBRANCA_ADDR", "127.0.0.1:8080", "Listen address (host:port).", func(c *Config, v string) error {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("must be host:port: %v", err)
		}
		c.Addr = v
		return nil
	}},
	{"COBRANCA_ALLOWED_ORIGINS", "", "Comma-separated Origins (scheme://host[:port]) allowed to call /mcp from a browser. Requests with another Origin get 403.", func(c *Config, v string) error {
		list, err := splitList(v, func(s string) error {
			u, err := url.Parse(s)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
				return fmt.Errorf("%q is not an origin like https://ops.example.com", s)
			}
			return nil
		})
		c.AllowedOrigins = list
		return err
	}},
	{"COBRANCA_ALLOWED_HOSTS", "", "Comma-separated Host header values accepted besides localhost, 127.0.0.1 and [::1] (any port). Behind a proxy, name the public host.", func(c *Config, v string) error {
		list, err := splitList(v, func(s string) error {
			if strings.ContainsAny(s, "/ @") {
				return fmt.Errorf("%q is not a host[:port]", s)
			}
			return nil
		})
		for i := range list {
			list[i] = strings.ToLower(list[i])
		}
		c.AllowedHosts = list
		return err
	}},
	{"COBRANCA_MAX_BODY_BYTES", "1048576", "Largest accepted request body in bytes; larger bodies get 413 before they are parsed.", func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1024 || n > 64<<20 {
			return errors.New("must be a whole number of bytes from 1024 to 67108864")
		}
		c.MaxBodyBytes = n
		return nil
	}},
	{"COBRANCA_LOG_LEVEL", "info", "`debug`, `info`, `warn` or `error`.", func(c *Config, v string) error {
		return c.LogLevel.UnmarshalText([]byte(v))
	}},
	{"COBRANCA_DATA_DIR", "./data", "Directory for the embedded database and development keys.", func(c *Config, v string) error {
		if v == "" {
			return errors.New("must not be empty")
		}
		c.DataDir = v
		return nil
	}},
}

// Load builds a Config from environ (as os.Environ returns it). Unknown
// COBRANCA_* variables and invalid values are errors naming the variable;
// all of them are reported together.
func Load(environ []string) (Config, error) {
	set := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(k, "COBRANCA_") {
			set[k] = v
		}
	}
	var c Config
	var errs []error
	for _, v := range variables {
		val, ok := set[v.name]
		if !ok || val == "" {
			val = v.def
		}
		delete(set, v.name)
		if val == "" && v.def == "" {
			continue
		}
		if err := v.apply(&c, val); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.name, err))
		}
	}
	unknown := make([]string, 0, len(set))
	for k := range set {
		unknown = append(unknown, k)
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		errs = append(errs, fmt.Errorf("%s: unknown variable (see the README's configuration table)", k))
	}
	return c, errors.Join(errs...)
}

func splitList(v string, check func(string) error) ([]string, error) {
	var out []string
	var errs []error
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if err := check(s); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}
