// Package text holds string helpers that nacflow's status writers share.
package text

import "unicode/utf8"

// Ellipsis marks where Truncate cut a string (three bytes in UTF-8).
const Ellipsis = "…"

// Truncate returns s when it is at most n bytes long; otherwise the longest
// prefix of s that ends on a rune boundary and, with Ellipsis appended, is at
// most n bytes. The result is valid UTF-8 whenever s is. For n smaller than
// len(Ellipsis), the result is s cut to n bytes on a rune boundary with no
// mark. Truncate never redacts: callers that write untrusted text to status
// redact first (internal/policy/redact).
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < len(Ellipsis) {
		return s[:runeStart(s, max(n, 0))]
	}
	return s[:runeStart(s, n-len(Ellipsis))] + Ellipsis
}

// runeStart returns the largest i ≤ n at which a rune of s starts.
func runeStart(s string, n int) int {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}
