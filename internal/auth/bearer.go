package auth

import "strings"

// ParseBearer returns the credentials of an Authorization header value
// using the Bearer scheme (RFC 6750 §2.1): the scheme, matched without
// regard to case, one or more spaces, and a token68. ok is false for any
// other scheme or a malformed value.
func ParseBearer(header string) (token string, ok bool) {
	const scheme = "bearer"
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) || header[len(scheme)] != ' ' {
		return "", false
	}
	token = strings.TrimLeft(header[len(scheme):], " ")
	if !isToken68(token) {
		return "", false
	}
	return token, true
}

// isToken68 reports whether s matches RFC 9110's
// token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isToken68(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}
