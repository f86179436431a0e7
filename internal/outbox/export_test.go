package outbox

import "time"

// SetHooks has the worker of an outbox built with c call before before sending each message
// and after after the mail server accepted it: the crash tests stop the worker there.
func SetHooks(c *Config, before, after func(ID)) {
	c.beforeSend, c.afterSend = before, after
}

// SetRetryAfter has an outbox built with c retry a transiently failed message after d instead
// of River's schedule: tests of what a retry does need not wait River's first second.
func SetRetryAfter(c *Config, d time.Duration) { c.retryAfter = d }

// SetIdleTimeout has s close a connection unused for d instead of IdleTimeout.
func SetIdleTimeout(s *SMTP, d time.Duration) { s.idleTimeout = d }
