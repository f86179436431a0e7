package collections

import (
	"strconv"
	"strings"
)

// quote quotes text a customer or a person wrote (a name, an address, a subject) for a
// preview, so that it reads as data: strconv.Quote, except that the no-break spaces the
// amount formatter writes (R$ 1.500,00 as Intl.NumberFormat prints it) stay as they are
// rather than becoming \u00a0 escapes in front of the person deciding.
func quote(s string) string {
	parts := strings.Split(s, "\u00a0")
	for i, p := range parts {
		q := strconv.Quote(p)
		parts[i] = q[1 : len(q)-1]
	}
	return `"` + strings.Join(parts, "\u00a0") + `"`
}
