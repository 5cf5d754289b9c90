package pool

import "strconv"

// plural is printers.Plural for the policy's reasons: pool imports nothing
// of ours, so this is its own copy of "1 block", "2 blocks".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
