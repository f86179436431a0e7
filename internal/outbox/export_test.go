package outbox

// SetHooks has the worker of an outbox built with c call before before sending each message
// and after after the mail server accepted it: the crash tests stop the worker there.
func SetHooks(c *Config, before, after func(ID)) {
	c.beforeSend, c.afterSend = before, after
}
